// The optimizer interface: parameter groups, zero_grad, step, and a saveable state.
// defines: ember::optim::Optimizer
//
// Every optimizer of ember derives from ParamGroupOptimizer (optim/param_group_optimizer.h), which
// implements all of this once; parallel::ReplicatedOptimizer forwards it to one per replica.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Applies one update to every parameter that has a gradient.
  virtual void step() = 0;
  // Drops every parameter's gradient (as PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  // Per-parameter state (momentum buffers, step counts, ...) and per-group options as tensors, so
  // that a checkpoint can hold them; keys such as "state.3.exp_avg" and "group.0.lr".
  virtual std::map<std::string, Tensor> state_dict() const = 0;
  // Restores that state (the other options come from the constructor). Checks every key first:
  // an unknown key, an index out of range or a wrong shape throws ember::Error and changes nothing.
  virtual void load_state_dict(const std::map<std::string, Tensor>& state) = 0;
  // Moves all state to `device` now (it also follows each parameter at the next step()).
  virtual void to(Device device) = 0;

  // Every group's learning rate, for schedulers.
  virtual std::vector<double> learning_rates() const = 0;
  virtual void set_learning_rates(const std::vector<double>& rates) = 0;
  // Every group's momentum, for schedulers that cycle it (OneCycleLR): SGD's and RMSprop's
  // momentum, Adam's and AdamW's β1; empty for an optimizer without one (Adagrad).
  virtual std::vector<double> momenta() const = 0;
  virtual void set_momenta(const std::vector<double>& momenta) = 0;

  // The parameters of every group, in order; state keys index into this list.
  virtual std::vector<Tensor> parameters() const = 0;
};

}  // namespace ember::optim
