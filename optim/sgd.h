// Stochastic gradient descent with momentum, as torch.optim.SGD.
// defines: ember::optim::SGD, SGDOptions, SGDParamGroup
#pragma once

#include <vector>

#include "ember/optim/param_group_optimizer.h"

namespace ember::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
};
// Throws ember::Error naming the option that torch.optim.SGD would reject.
void check_options(const SGDOptions& options);

using SGDParamGroup = ParamGroup<SGDOptions>;

// The update, per parameter p with gradient g (torch.optim.SGD's rule, kernels/optimizer_step.h):
//   d = ±g + weight_decay·p;  if momentum: buf = (first step ? d : momentum·buf + (1 − dampening)·d),
//   d = nesterov ? d + momentum·buf : buf;  p −= lr·d.
// One kernel call per (group, device, dtype): on a GPU one fused multi-tensor kernel. State:
// "momentum_buffer" (with momentum).
class SGD : public OptimizerBase<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options) : SGD(std::vector<SGDParamGroup>{{std::move(params), options}}) {}
  explicit SGD(std::vector<SGDParamGroup> groups) : OptimizerBase("SGD", false, std::move(groups)) {}

  // The momentum buffer of parameter `index` (in parameters() order); undefined before its first
  // step, and in a group without momentum.
  Tensor momentum_buffer(size_t index) const {
    return groups_[group_of(index)].options.momentum != 0 ? state(index, "momentum_buffer") : Tensor();
  }

 protected:
  bool has_momentum() const override { return true; }
  double group_momentum(size_t group) const override { return groups_[group].options.momentum; }
  void set_group_momentum(size_t group, double momentum) override { groups_[group].options.momentum = momentum; }
  std::array<std::string, kMaxStateBuffers> state_names(size_t group) const override;
  Tensor initial_state(size_t group, size_t slot, const Tensor& param) const override;
  void update(size_t group, std::vector<ParamUpdate>& bucket) override;
};

}  // namespace ember::optim
