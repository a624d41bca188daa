// ReduceLROnPlateau: torch.optim.lr_scheduler.ReduceLROnPlateau's rule, step by step.
#include <algorithm>
#include <limits>

#include "ember/common/error.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/scheduler_state.h"

namespace ember::optim {

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)) {
  const size_t groups = optimizer.learning_rates().size();
  EMBER_CHECK(options_.factor < 1.0 && options_.factor >= 0, "ReduceLROnPlateau: factor must be in [0, 1), got ",
              options_.factor);
  EMBER_CHECK(options_.patience >= 0 && options_.cooldown >= 0, "ReduceLROnPlateau: patience and cooldown must be "
              ">= 0, got ", options_.patience, " and ", options_.cooldown);
  if (options_.min_lr.size() == 1) options_.min_lr.assign(groups, options_.min_lr[0]);
  EMBER_CHECK(options_.min_lr.size() == groups, "ReduceLROnPlateau: expected 1 or ", groups, " min_lr values, got ",
              options_.min_lr.size());
  best_ = options_.mode == ReduceLROnPlateauOptions::Mode::Min ? std::numeric_limits<double>::infinity()
                                                               : -std::numeric_limits<double>::infinity();
  last_lr_ = optimizer.learning_rates();
}

bool ReduceLROnPlateau::is_better(double metric) const {
  using Mode = ReduceLROnPlateauOptions::Mode;
  const bool rel = options_.threshold_mode == ReduceLROnPlateauOptions::ThresholdMode::Rel;
  if (options_.mode == Mode::Min) return rel ? metric < best_ * (1 - options_.threshold) : metric < best_ - options_.threshold;
  return rel ? metric > best_ * (options_.threshold + 1) : metric > best_ + options_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > options_.patience) {
    std::vector<double> rates = optimizer_.learning_rates();
    for (size_t g = 0; g < rates.size(); ++g) {
      const double reduced = std::max(rates[g] * options_.factor, options_.min_lr[g]);
      if (rates[g] - reduced > options_.eps) rates[g] = reduced;
    }
    optimizer_.set_learning_rates(rates);
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_ = optimizer_.learning_rates();
}

std::map<std::string, Tensor> ReduceLROnPlateau::state_dict() const {
  return {{"last_epoch", detail::int_state(last_epoch_)},
          {"best", tensor(std::vector<double>{best_})},
          {"num_bad_epochs", detail::int_state(num_bad_epochs_)},
          {"cooldown_counter", detail::int_state(cooldown_counter_)}};
}

void ReduceLROnPlateau::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string op = "ReduceLROnPlateau::load_state_dict";
  detail::check_keys(op, state, {"last_epoch", "best", "num_bad_epochs", "cooldown_counter"});
  const int64_t epoch = detail::read_int(op, state, "last_epoch");
  const double best = detail::read_double(op, state, "best");
  const int64_t bad = detail::read_int(op, state, "num_bad_epochs");
  const int64_t cooldown = detail::read_int(op, state, "cooldown_counter");
  EMBER_CHECK(epoch >= 0 && bad >= 0 && cooldown >= 0, op, ": last_epoch, num_bad_epochs and cooldown_counter must "
              "be >= 0, got ", epoch, ", ", bad, " and ", cooldown);
  last_epoch_ = epoch;
  best_ = best;
  num_bad_epochs_ = bad;
  cooldown_counter_ = cooldown;
  last_lr_ = optimizer_.learning_rates();
}

}  // namespace ember::optim
