// Stochastic gradient descent with momentum, as torch.optim.SGD.
// defines: ember::optim::SGD, SGDOptions, SGDParamGroup
#pragma once

#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

struct SGDParamGroup {
  std::vector<Tensor> params;
  SGDOptions options;
};

// The update, per parameter p with gradient g (torch.optim.SGD's rule):
//   d = g + weight_decay·p;  if momentum: buf = (first step ? d : momentum·buf + (1 − dampening)·d),
//   d = nesterov ? d + momentum·buf : buf;  p −= lr·d.
// One kernel call per CPU parameter; the CUDA parameters of a group are updated together, one
// fused multi-tensor kernel per (device, dtype) (kernels/cuda/sgd.h). Momentum buffers live on
// each parameter's device, and follow the parameter when the model was moved since the last
// step. Throws ember::Error for a gradient whose shape, dtype or device differs.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  explicit SGD(std::vector<SGDParamGroup> groups);

  void add_param_group(SGDParamGroup group);
  const std::vector<SGDParamGroup>& param_groups() const { return groups_; }

  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;
  void to(Device device) override;
  std::vector<double> learning_rates() const override;
  void set_learning_rates(const std::vector<double>& rates) override;
  std::vector<Tensor> parameters() const override;

  // The momentum buffer of parameter `index` (in parameters() order); undefined before its first step.
  Tensor momentum_buffer(size_t index) const { return buffers_.at(index); }

 private:
  std::vector<SGDParamGroup> groups_;
  std::vector<Tensor> buffers_;  // one per parameter, in parameters() order
};

}  // namespace ember::optim
