#include "ember/optim/adam.h"

#include <cmath>

#include "ember/common/error.h"
#include "ember/kernels/cpu/optimizer_step.h"
#include "ember/kernels/cuda/optimizer_step.h"
#include "ember/optim/rule_kernels.h"

namespace ember::optim {

namespace {

template <class Options>
void check_adam(const char* op, const Options& o) {
  EMBER_CHECK(o.lr >= 0, op, ": learning rate must be >= 0, got ", o.lr);
  EMBER_CHECK(o.eps >= 0, op, ": eps must be >= 0, got ", o.eps);
  EMBER_CHECK(o.betas.first >= 0 && o.betas.first < 1, op, ": betas[0] must be in [0, 1), got ", o.betas.first);
  EMBER_CHECK(o.betas.second >= 0 && o.betas.second < 1, op, ": betas[1] must be in [0, 1), got ", o.betas.second);
  EMBER_CHECK(o.weight_decay >= 0, op, ": weight_decay must be >= 0, got ", o.weight_decay);
}

}  // namespace

void check_options(const AdamOptions& o) { check_adam("Adam", o); }
void check_options(const AdamWOptions& o) { check_adam("AdamW", o); }

namespace detail {

template <class Options>
std::array<std::string, kMaxStateBuffers> AdamFamily<Options>::state_names(size_t group) const {
  return {"exp_avg", "exp_avg_sq", this->groups_[group].options.amsgrad ? "max_exp_avg_sq" : ""};
}

template <class Options>
void AdamFamily<Options>::update(size_t group, std::vector<ParamUpdate>& bucket) {
  const Options& o = this->groups_[group].options;
  const char* op = this->name().c_str();
  const double beta1 = o.betas.first, beta2 = o.betas.second;
  visit_floating(bucket.front().param.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const kernels::AdamRule<T> rule{.beta1 = T(beta1), .one_minus_beta1 = T(1 - beta1), .beta2 = T(beta2),
                                    .one_minus_beta2 = T(1 - beta2), .eps = T(o.eps),
                                    .weight_decay = T(o.weight_decay), .decay = T(1 - o.lr * o.weight_decay),
                                    .amsgrad = o.amsgrad, .decoupled = decoupled_, .maximize = o.maximize};
    // PyTorch's bias corrections, in double from the step count (1 − β^t, as Python computes them).
    auto coefficients = [&](int64_t step) {
      const double t = static_cast<double>(step);
      return std::pair<double, double>{o.lr / (1 - std::pow(beta1, t)), std::sqrt(1 - std::pow(beta2, t))};
    };
    apply_rule<T>(op, bucket, rule, coefficients, &kernels::cpu::adam_step<T>, &kernels::cuda::adam_step<T>);
  });
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

}  // namespace detail

}  // namespace ember::optim
