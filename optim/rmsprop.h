// RMSprop, as torch.optim.RMSprop (centered, momentum, maximize).
// defines: ember::optim::RMSprop, RMSpropOptions
#pragma once

#include <vector>

#include "ember/optim/param_group_optimizer.h"

namespace ember::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
  bool maximize = false;
};
// Throws ember::Error naming the option that torch.optim.RMSprop would reject.
void check_options(const RMSpropOptions& options);

// Per element: s = α·s + (1 − α)·g²; centered: ḡ = α·ḡ + (1 − α)·g, avg = √(s − ḡ²) + eps, else
// avg = √s + eps; momentum > 0: buf = momentum·buf + g/avg, p −= lr·buf; else p −= lr·g/avg.
// State: "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered), "step".
class RMSprop : public OptimizerBase<RMSpropOptions> {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions options = {})
      : RMSprop(std::vector<ParamGroup<RMSpropOptions>>{{std::move(params), options}}) {}
  explicit RMSprop(std::vector<ParamGroup<RMSpropOptions>> groups) : OptimizerBase("RMSprop", true, std::move(groups)) {}

 protected:
  bool has_momentum() const override { return true; }
  double group_momentum(size_t group) const override { return groups_[group].options.momentum; }
  void set_group_momentum(size_t group, double momentum) override { groups_[group].options.momentum = momentum; }
  std::array<std::string, kMaxStateBuffers> state_names(size_t group) const override;
  void update(size_t group, std::vector<ParamUpdate>& bucket) override;
};

}  // namespace ember::optim
