// SequentialLR: torch.optim.lr_scheduler.SequentialLR, each scheduler from its own epoch 0 at its milestone.
#include <algorithm>

#include "ember/common/error.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/scheduler_state.h"

namespace ember::optim {

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler("SequentialLR", optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK(!schedulers_.empty(), "SequentialLR: expected at least one scheduler");
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expected one milestone fewer than "
              "schedulers, got ", schedulers_.size(), " schedulers and ", milestones_.size(), " milestones");
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()) &&
              (milestones_.empty() || milestones_.front() > 0), "SequentialLR: milestones must be positive and "
              "increasing, got ", Shape(milestones_));
  for (size_t k = 0; k < schedulers_.size(); ++k) {
    EMBER_CHECK(schedulers_[k] != nullptr, "SequentialLR: scheduler ", k, " is null");
    EMBER_CHECK(&schedulers_[k]->optimizer_ == &optimizer, "SequentialLR: scheduler ", k,
                " drives another optimizer than the one given");
  }
  // Every scheduler starts from the rates the first one was built on (PyTorch's initial_lr):
  // the ones built after it saw the rates it had already set.
  base_lrs_ = schedulers_[0]->base_lrs_;
  for (auto& s : schedulers_) {
    if (s != schedulers_[0] && s->follows_initial_lr()) s->base_lrs_ = base_lrs_;
  }
  initial_step();
}

// The scheduler active at `epoch`, and its own epoch (counted from its milestone).
static std::pair<size_t, int64_t> active(const std::vector<int64_t>& milestones, int64_t epoch) {
  const size_t k = std::upper_bound(milestones.begin(), milestones.end(), epoch) - milestones.begin();
  return {k, k == 0 ? epoch : epoch - milestones[k - 1]};
}

std::vector<double> SequentialLR::rates_at(int64_t epoch) const {
  const auto [k, own_epoch] = active(milestones_, epoch);
  return schedulers_[k]->rates_at(own_epoch);
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto [k, own_epoch] = active(milestones_, last_epoch_);
  LRScheduler& s = *schedulers_[k];
  s.last_epoch_ = own_epoch;
  s.apply(own_epoch);
  last_lr_ = s.last_lr_;
}

std::map<std::string, Tensor> SequentialLR::state_dict() const {
  std::map<std::string, Tensor> out = LRScheduler::state_dict();
  for (size_t k = 0; k < schedulers_.size(); ++k) {
    for (auto& [key, value] : schedulers_[k]->state_dict()) out["scheduler." + std::to_string(k) + "." + key] = value;
  }
  return out;
}

void SequentialLR::load_state_dict(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> own;
  std::vector<std::map<std::string, Tensor>> parts(schedulers_.size());
  for (const auto& [key, value] : state) {
    bool child = false;
    for (size_t k = 0; k < schedulers_.size() && !child; ++k) {
      const std::string prefix = "scheduler." + std::to_string(k) + ".";
      if (key.compare(0, prefix.size(), prefix) == 0) {
        parts[k][key.substr(prefix.size())] = value;
        child = true;
      }
    }
    if (!child) own[key] = value;
  }
  // Checked all first (each load restores its scheduler when it throws), then applied together.
  std::vector<std::map<std::string, Tensor>> before;
  for (auto& s : schedulers_) before.push_back(s->state_dict());
  size_t loaded = 0;
  try {
    for (; loaded < schedulers_.size(); ++loaded) schedulers_[loaded]->load_state_dict(parts[loaded]);
    LRScheduler::load_state_dict(own);
  } catch (...) {
    for (size_t k = 0; k < loaded; ++k) schedulers_[k]->load_state_dict(before[k]);
    throw;
  }
}

}  // namespace ember::optim
