// Adagrad, as torch.optim.Adagrad (lr_decay, initial_accumulator_value, maximize).
// defines: ember::optim::Adagrad, AdagradOptions
#pragma once

#include <vector>

#include "ember/optim/param_group_optimizer.h"

namespace ember::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double initial_accumulator_value = 0.0;
  double eps = 1e-10;
  bool maximize = false;
};
// Throws ember::Error naming the option that torch.optim.Adagrad would reject.
void check_options(const AdagradOptions& options);

// Per element, at step t: sum += g², p −= lr/(1 + (t − 1)·lr_decay) · g / (√sum + eps).
// State: "sum" (starting at initial_accumulator_value) and "step". No momentum to cycle.
class Adagrad : public OptimizerBase<AdagradOptions> {
 public:
  Adagrad(std::vector<Tensor> params, AdagradOptions options = {})
      : Adagrad(std::vector<ParamGroup<AdagradOptions>>{{std::move(params), options}}) {}
  explicit Adagrad(std::vector<ParamGroup<AdagradOptions>> groups) : OptimizerBase("Adagrad", true, std::move(groups)) {}

 protected:
  std::array<std::string, kMaxStateBuffers> state_names(size_t group) const override;
  Tensor initial_state(size_t group, size_t slot, const Tensor& param) const override;
  void update(size_t group, std::vector<ParamUpdate>& bucket) override;
};

}  // namespace ember::optim
