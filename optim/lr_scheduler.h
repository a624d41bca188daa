// Learning-rate schedulers with torch.optim.lr_scheduler's names, arguments and values.
// defines: ember::optim::Scheduler, LRScheduler, StepLR, MultiStepLR, ExponentialLR, LinearLR,
//          CosineAnnealingLR, OneCycleLR, SequentialLR, ReduceLROnPlateau
//
// Each scheduler sets the optimizer's learning rates when it is built (its epoch 0, as PyTorch's
// constructors do) and at every step(). An "epoch" is whatever the caller steps it by: call
// step() once per epoch, or once per batch for a schedule counted in batches (OneCycleLR's
// total_steps, a per-batch warmup). The rates are PyTorch's closed forms from the base rates and
// the step count, which PyTorch's chainable forms reach to the last few bits; so a scheduler
// restored from state_dict() continues exactly where the saved one was. A checkpoint holds the
// optimizer's rates (optimizer.state_dict()) beside the scheduler's own state.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

// What every scheduler has: its last rates and a saveable state.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  std::vector<double> get_last_lr() const { return last_lr_; }
  // Tensors a checkpoint holds ("last_epoch", ...). load_state_dict checks every key first and
  // throws ember::Error changing nothing on a missing, unknown or misshapen one.
  virtual std::map<std::string, Tensor> state_dict() const = 0;
  virtual void load_state_dict(const std::map<std::string, Tensor>& state) = 0;

 protected:
  std::vector<double> last_lr_;
};

// A schedule of the step count: rates_at(epoch) from the base rates (the optimizer's rates when
// the scheduler was built, PyTorch's initial_lr).
class LRScheduler : public Scheduler {
 public:
  virtual void step();
  int64_t last_epoch() const { return last_epoch_; }
  // "last_epoch" (int64) and "base_lrs" (float64, one per group).
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

 protected:
  LRScheduler(std::string name, Optimizer& optimizer);
  virtual std::vector<double> rates_at(int64_t epoch) const = 0;
  // Sets epoch's rates (and, for OneCycleLR, momenta) on the optimizer.
  virtual void apply(int64_t epoch);
  // True when rates_at starts from base_lrs_ (the optimizer's rates at construction, PyTorch's
  // initial_lr), which SequentialLR resets for every child to its first child's; false for a
  // schedule of its own peak rates (OneCycleLR's max_lr).
  virtual bool follows_initial_lr() const { return true; }
  // Epoch 0, as PyTorch's constructors step once: every constructor ends with it.
  void initial_step();
  // rates_at's helper: f(base, epoch) for every group's base rate.
  template <class F>
  std::vector<double> each_base(const F& f) const {
    std::vector<double> out;
    for (double base : base_lrs_) out.push_back(f(base));
    return out;
  }

  std::string name_;
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = 0;

  friend class SequentialLR;
};

// lr = base · gamma^⌊epoch / step_size⌋.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base · gamma^(number of milestones <= epoch); milestones in increasing order.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = base · gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  double gamma_;
};

// A linear warmup (or decay): lr = base · (start + (end − start) · min(epoch, total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr = eta_min + (base − eta_min) · (1 + cos(π · epoch / T_max)) / 2 (periodic past T_max, as PyTorch's).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

struct OneCycleLROptions {
  int64_t total_steps = 0;  // required: the number of step() calls of the whole run
  double pct_start = 0.3;
  enum class Anneal { Cos, Linear } anneal_strategy = Anneal::Cos;
  bool cycle_momentum = true;  // SGD's/RMSprop's momentum or Adam's β1, from max_momentum down and back
  double base_momentum = 0.85;
  double max_momentum = 0.95;
  double div_factor = 25.0;        // initial lr = max_lr / div_factor
  double final_div_factor = 1e4;   // final lr = initial lr / final_div_factor
  bool three_phase = false;
};

// Smith's one-cycle policy: up from max_lr/div_factor to max_lr over pct_start of total_steps,
// then down to the final rate (PyTorch's phases, cos or linear annealing); one step() per batch.
// The total_steps-th step() (after the last batch) leaves the final rate, where PyTorch
// extrapolates past it; more steps throw.
class OneCycleLR : public LRScheduler {
 public:
  // One max_lr for every group, or one per group.
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, OneCycleLROptions options);
  OneCycleLR(Optimizer& optimizer, double max_lr, OneCycleLROptions options);

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;
  void apply(int64_t epoch) override;
  bool follows_initial_lr() const override { return false; }

 private:
  enum class Rate { Initial, Max, Min };
  enum class Momentum { Base, Max };
  struct Phase {
    double end_step;
    Rate start_lr, end_lr;
    Momentum start_momentum, end_momentum;
  };
  // (phase, fraction of it) at `epoch`.
  std::pair<const Phase*, double> phase_at(int64_t epoch) const;
  double anneal(double start, double end, double pct) const;

  std::vector<double> max_lrs_;
  OneCycleLROptions options_;
  std::vector<Phase> phases_;
};

// Runs schedulers[0] until milestones[0], then schedulers[1] from its own epoch 0, and so on (one
// milestone fewer than schedulers). The schedulers must drive `optimizer`; they are shared with
// the caller, who keeps no other use of them.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  // Its own "last_epoch" and each scheduler's state under "scheduler.<k>.".
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

 protected:
  std::vector<double> rates_at(int64_t epoch) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

struct ReduceLROnPlateauOptions {
  enum class Mode { Min, Max } mode = Mode::Min;
  double factor = 0.1;
  int64_t patience = 10;
  double threshold = 1e-4;
  enum class ThresholdMode { Rel, Abs } threshold_mode = ThresholdMode::Rel;
  int64_t cooldown = 0;
  std::vector<double> min_lr = {0.0};  // one for every group, or one per group
  double eps = 1e-8;
};

// Multiplies the rates by `factor` once the metric has not improved for `patience` steps.
class ReduceLROnPlateau : public Scheduler {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  void step(double metric);  // once per epoch, with the validation metric
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  // "last_epoch", "best", "num_bad_epochs", "cooldown_counter".
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;

 private:
  bool is_better(double metric) const;

  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

}  // namespace ember::optim
