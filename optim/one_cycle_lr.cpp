// OneCycleLR: torch.optim.lr_scheduler.OneCycleLR's phases and annealing, in closed form as PyTorch's.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ember/common/error.h"
#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleLROptions options)
    : OneCycleLR(optimizer, std::vector<double>(optimizer.learning_rates().size(), max_lr), options) {}

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleLROptions options)
    : LRScheduler("OneCycleLR", optimizer), max_lrs_(std::move(max_lr)), options_(options) {
  const OneCycleLROptions& o = options_;
  EMBER_CHECK(o.total_steps > 0, "OneCycleLR: total_steps must be positive, got ", o.total_steps);
  EMBER_CHECK(o.pct_start >= 0 && o.pct_start <= 1, "OneCycleLR: pct_start must be in [0, 1], got ", o.pct_start);
  EMBER_CHECK(max_lrs_.size() == base_lrs_.size(), "OneCycleLR: ", max_lrs_.size(), " max_lr values for ",
              base_lrs_.size(), " param groups");
  EMBER_CHECK(o.div_factor > 0 && o.final_div_factor > 0, "OneCycleLR: div_factor and final_div_factor must be "
              "positive, got ", o.div_factor, " and ", o.final_div_factor);
  const double total = static_cast<double>(o.total_steps);
  if (o.three_phase) {
    phases_ = {{o.pct_start * total - 1, Rate::Initial, Rate::Max, Momentum::Max, Momentum::Base},
               {2 * o.pct_start * total - 2, Rate::Max, Rate::Initial, Momentum::Base, Momentum::Max},
               {total - 1, Rate::Initial, Rate::Min, Momentum::Max, Momentum::Max}};
  } else {
    phases_ = {{o.pct_start * total - 1, Rate::Initial, Rate::Max, Momentum::Max, Momentum::Base},
               {total - 1, Rate::Max, Rate::Min, Momentum::Base, Momentum::Max}};
  }
  for (size_t g = 0; g < max_lrs_.size(); ++g) base_lrs_[g] = max_lrs_[g] / o.div_factor;  // PyTorch's initial_lr
  if (o.cycle_momentum) {
    EMBER_CHECK(!optimizer.momenta().empty(), "OneCycleLR: cycle_momentum needs an optimizer with a momentum "
                "(SGD, RMSprop, Adam, AdamW); pass cycle_momentum = false for this one");
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == OneCycleLROptions::Anneal::Cos) {
    return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  }
  return (end - start) * pct + start;
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::phase_at(int64_t epoch) const {
  EMBER_CHECK(epoch <= options_.total_steps, "OneCycleLR: stepped ", epoch, " times but total_steps is ",
              options_.total_steps);
  const double step = static_cast<double>(epoch);
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (step <= phase.end_step || i + 1 == phases_.size()) {
      // Past the last phase's end (the total_steps-th step, after the last batch) the rate stays
      // at the final one, where PyTorch extrapolates (to a negative rate under linear annealing).
      return {&phase, std::min(1.0, (step - start_step) / (phase.end_step - start_step))};
    }
    start_step = phase.end_step;
  }
  return {&phases_.back(), 1.0};  // not reached: the last phase always matches
}

std::vector<double> OneCycleLR::rates_at(int64_t epoch) const {
  const auto [phase, pct] = phase_at(epoch);
  std::vector<double> out;
  for (size_t g = 0; g < max_lrs_.size(); ++g) {
    const double initial = base_lrs_[g], max = max_lrs_[g], min = initial / options_.final_div_factor;
    auto rate = [&](Rate r) { return r == Rate::Initial ? initial : r == Rate::Max ? max : min; };
    out.push_back(anneal(rate(phase->start_lr), rate(phase->end_lr), pct));
  }
  return out;
}

void OneCycleLR::apply(int64_t epoch) {
  LRScheduler::apply(epoch);
  if (!options_.cycle_momentum) return;
  const auto [phase, pct] = phase_at(epoch);
  auto momentum = [&](Momentum m) { return m == Momentum::Base ? options_.base_momentum : options_.max_momentum; };
  const double value = anneal(momentum(phase->start_momentum), momentum(phase->end_momentum), pct);
  optimizer_.set_momenta(std::vector<double>(max_lrs_.size(), value));
}

}  // namespace ember::optim
