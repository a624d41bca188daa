// Adam and AdamW, as torch.optim.Adam and torch.optim.AdamW (amsgrad, maximize).
// defines: ember::optim::Adam, AdamOptions, AdamW, AdamWOptions
#pragma once

#include <utility>
#include <vector>

#include "ember/optim/param_group_optimizer.h"

namespace ember::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2: added to the gradient
  bool amsgrad = false;
  bool maximize = false;
};
// torch.optim.AdamW's defaults; weight decay is decoupled: p ← p·(1 − lr·weight_decay) first.
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};
// Throw ember::Error naming the option that torch.optim would reject.
void check_options(const AdamOptions& options);
void check_options(const AdamWOptions& options);

namespace detail {
// What Adam and AdamW share: the state, the β1 that OneCycleLR cycles, the update (one rule,
// decoupled or not).
template <class Options>
class AdamFamily : public OptimizerBase<Options> {
 protected:
  AdamFamily(std::string name, bool decoupled, std::vector<ParamGroup<Options>> groups)
      : OptimizerBase<Options>(std::move(name), true, std::move(groups)), decoupled_(decoupled) {}
  bool has_momentum() const override { return true; }
  double group_momentum(size_t group) const override { return this->groups_[group].options.betas.first; }
  void set_group_momentum(size_t group, double beta1) override { this->groups_[group].options.betas.first = beta1; }
  std::array<std::string, kMaxStateBuffers> state_names(size_t group) const override;
  void update(size_t group, std::vector<ParamUpdate>& bucket) override;

 private:
  bool decoupled_;
};
}  // namespace detail

// Per element, at step t (counted per parameter): m = β1·m + (1 − β1)·g, v = β2·v + (1 − β2)·g²
// (amsgrad: v̂ = max(v̂, v)), p −= lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps); see
// kernels/optimizer_step.h for the exact order of operations. State: "exp_avg", "exp_avg_sq",
// "max_exp_avg_sq" (amsgrad) and "step". OneCycleLR cycles β1 as the momentum.
class Adam : public detail::AdamFamily<AdamOptions> {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {})
      : Adam(std::vector<ParamGroup<AdamOptions>>{{std::move(params), options}}) {}
  explicit Adam(std::vector<ParamGroup<AdamOptions>> groups) : AdamFamily("Adam", false, std::move(groups)) {}
};

// Adam with decoupled weight decay: p ← p·(1 − lr·weight_decay) before Adam's step.
class AdamW : public detail::AdamFamily<AdamWOptions> {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {})
      : AdamW(std::vector<ParamGroup<AdamWOptions>>{{std::move(params), options}}) {}
  explicit AdamW(std::vector<ParamGroup<AdamWOptions>> groups) : AdamFamily("AdamW", true, std::move(groups)) {}
};

}  // namespace ember::optim
