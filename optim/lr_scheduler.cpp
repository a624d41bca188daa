#include "ember/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "ember/common/error.h"
#include "ember/optim/scheduler_state.h"

namespace ember::optim {

LRScheduler::LRScheduler(std::string name, Optimizer& optimizer)
    : name_(std::move(name)), optimizer_(optimizer), base_lrs_(optimizer.learning_rates()) {}

void LRScheduler::initial_step() {
  last_epoch_ = 0;
  apply(0);
}

void LRScheduler::apply(int64_t epoch) {
  last_lr_ = rates_at(epoch);
  optimizer_.set_learning_rates(last_lr_);
}

void LRScheduler::step() {
  apply(last_epoch_ + 1);  // a step that throws (past OneCycleLR's total_steps) leaves the epoch as it was
  ++last_epoch_;
}

std::map<std::string, Tensor> LRScheduler::state_dict() const {
  return {{"last_epoch", detail::int_state(last_epoch_)}, {"base_lrs", tensor(base_lrs_)}};
}

void LRScheduler::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string op = name_ + "::load_state_dict";
  detail::check_keys(op, state, {"last_epoch", "base_lrs"});
  const int64_t epoch = detail::read_int(op, state, "last_epoch");
  EMBER_CHECK(epoch >= 0, op, ": last_epoch must be >= 0, got ", epoch);
  std::vector<double> bases = detail::read_doubles(op, state, "base_lrs", base_lrs_.size());
  const std::vector<double> saved_bases = std::exchange(base_lrs_, std::move(bases));
  try {
    last_lr_ = rates_at(epoch);  // also checks the epoch (OneCycleLR's total_steps)
  } catch (...) {
    base_lrs_ = saved_bases;
    throw;
  }
  last_epoch_ = epoch;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler("StepLR", optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::rates_at(int64_t epoch) const {
  const double factor = std::pow(gamma_, static_cast<double>(epoch / step_size_));
  return each_base([&](double base) { return base * factor; });
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler("MultiStepLR", optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  EMBER_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "MultiStepLR: milestones must be in "
              "increasing order, got ", Shape(milestones_));
  initial_step();
}

std::vector<double> MultiStepLR::rates_at(int64_t epoch) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  const double factor = std::pow(gamma_, static_cast<double>(passed));
  return each_base([&](double base) { return base * factor; });
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler("ExponentialLR", optimizer), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::rates_at(int64_t epoch) const {
  const double factor = std::pow(gamma_, static_cast<double>(epoch));
  return each_base([&](double base) { return base * factor; });
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler("LinearLR", optimizer), start_factor_(start_factor), end_factor_(end_factor),
      total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR: start_factor must be in (0, 1], got ", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR: end_factor must be in [0, 1], got ", end_factor);
  EMBER_CHECK(total_iters > 0, "LinearLR: total_iters must be positive, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::rates_at(int64_t epoch) const {
  const double done = static_cast<double>(std::min(epoch, total_iters_)) / static_cast<double>(total_iters_);
  const double factor = start_factor_ + (end_factor_ - start_factor_) * done;
  return each_base([&](double base) { return base * factor; });
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler("CosineAnnealingLR", optimizer), t_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max > 0, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::rates_at(int64_t epoch) const {
  const double cosine = std::cos(std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max_));
  return each_base([&](double base) { return eta_min_ + (base - eta_min_) * (1 + cosine) / 2; });
}

}  // namespace ember::optim
