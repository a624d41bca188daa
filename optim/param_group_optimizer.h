// What every ember optimizer shares: parameter groups with their own options, per-parameter state
// that lives on each parameter's device and follows it, step counts, state_dict/load_state_dict,
// and one kernel call per (group, device, dtype) bucket of parameters.
// defines: ember::optim::ParamGroup, ParamUpdate, ParamGroupOptimizer, OptimizerBase
//
// An optimizer (SGD, Adam, ...) derives from OptimizerBase<ItsOptions> and says three things:
// the names of its state buffers (state_names), how a new buffer starts (initial_state; zeros by
// default) and how one bucket of parameters is updated (update, one kernel call). Options types
// declare `void check_options(const ItsOptions&)`, which add_param_group calls.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

template <class Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options;
};

inline constexpr size_t kMaxStateBuffers = 3;

// One parameter of a bucket, as ParamGroupOptimizer::update() receives it: its gradient
// (contiguous), its buffers in state_names() order (undefined where a name is empty), and its
// step count, this step included.
struct ParamUpdate {
  Tensor param, grad;
  std::array<Tensor, kMaxStateBuffers> buffers;
  int64_t step = 0;
  bool first_step = false;  // at least one buffer was just made by initial_state()
};

class ParamGroupOptimizer : public Optimizer {
 public:

  void step() final;
  // "state.<i>.<buffer name>" for every buffer that exists, "state.<i>.step" (int64) for
  // optimizers that count steps (all but SGD), "group.<g>.lr" and, where the optimizer has one,
  // "group.<g>.momentum" (which OneCycleLR cycles).
  std::map<std::string, Tensor> state_dict() const final;
  void load_state_dict(const std::map<std::string, Tensor>& state) final;
  void to(Device device) final;
  std::vector<double> learning_rates() const final;
  void set_learning_rates(const std::vector<double>& rates) final;
  std::vector<double> momenta() const final;
  void set_momenta(const std::vector<double>& momenta) final;
  std::vector<Tensor> parameters() const final;

  // The state buffer `name` (PyTorch's name: "exp_avg", "momentum_buffer", ...) of parameter
  // `index` (in parameters() order); undefined before its first step.
  Tensor state(size_t index, const std::string& name) const;
  // How many updates parameter `index` has had.
  int64_t step_count(size_t index) const { return state_.at(index).step; }

 protected:
  // `name` is the optimizer's name in messages ("Adam"); `counts_steps`: state_dict saves steps.
  ParamGroupOptimizer(std::string name, bool counts_steps) : name_(std::move(name)), counts_steps_(counts_steps) {}

  // Checks and registers a new group's parameters (called by OptimizerBase::add_param_group).
  void add_group_params(const std::vector<Tensor>& params);

  virtual size_t group_count() const = 0;
  virtual const std::vector<Tensor>& group_params(size_t group) const = 0;
  virtual double group_lr(size_t group) const = 0;
  virtual void set_group_lr(size_t group, double lr) = 0;
  // The group's momentum option (SGD's momentum, Adam's β1), where the optimizer has one.
  virtual bool has_momentum() const { return false; }
  virtual double group_momentum(size_t /*group*/) const { return 0; }
  virtual void set_group_momentum(size_t /*group*/, double /*momentum*/) {}
  // The buffers a parameter of `group` carries, by slot; an empty name leaves the slot unused.
  virtual std::array<std::string, kMaxStateBuffers> state_names(size_t group) const = 0;
  // A new buffer for `slot` of `param` (zeros by default).
  virtual Tensor initial_state(size_t group, size_t slot, const Tensor& param) const;
  // Updates one bucket: parameters of one group, all on one device with one dtype.
  virtual void update(size_t group, std::vector<ParamUpdate>& bucket) = 0;

  const std::string& name() const { return name_; }
  // The group parameter `index` (in parameters() order) belongs to.
  size_t group_of(size_t index) const;

 private:
  struct ParamState {
    std::array<Tensor, kMaxStateBuffers> buffers;
    int64_t step = 0;
  };
  std::string name_;
  bool counts_steps_;
  std::vector<ParamState> state_;  // one per parameter, in parameters() order
};

// The group bookkeeping for one options type.
template <class Options>
class OptimizerBase : public ParamGroupOptimizer {
 public:
  void add_param_group(ParamGroup<Options> group) {
    check_options(group.options);
    add_group_params(group.params);
    groups_.push_back(std::move(group));
  }
  const std::vector<ParamGroup<Options>>& param_groups() const { return groups_; }
  // A group's options, to change between steps (as PyTorch's param_groups[g]["weight_decay"] = ...).
  Options& options(size_t group) { return groups_.at(group).options; }

 protected:
  OptimizerBase(std::string name, bool counts_steps, std::vector<ParamGroup<Options>> groups)
      : ParamGroupOptimizer(std::move(name), counts_steps) {
    for (auto& group : groups) add_param_group(std::move(group));
  }

  size_t group_count() const final { return groups_.size(); }
  const std::vector<Tensor>& group_params(size_t group) const final { return groups_[group].params; }
  double group_lr(size_t group) const final { return groups_[group].options.lr; }
  void set_group_lr(size_t group, double lr) final { groups_[group].options.lr = lr; }

  std::vector<ParamGroup<Options>> groups_;
};

}  // namespace ember::optim
