#include "ember/optim/adagrad.h"

#include "ember/common/error.h"
#include "ember/kernels/cpu/optimizer_step.h"
#include "ember/kernels/cuda/optimizer_step.h"
#include "ember/optim/rule_kernels.h"

namespace ember::optim {

void check_options(const AdagradOptions& o) {
  EMBER_CHECK(o.lr >= 0, "Adagrad: learning rate must be >= 0, got ", o.lr);
  EMBER_CHECK(o.lr_decay >= 0, "Adagrad: lr_decay must be >= 0, got ", o.lr_decay);
  EMBER_CHECK(o.weight_decay >= 0, "Adagrad: weight_decay must be >= 0, got ", o.weight_decay);
  EMBER_CHECK(o.initial_accumulator_value >= 0, "Adagrad: initial_accumulator_value must be >= 0, got ",
              o.initial_accumulator_value);
  EMBER_CHECK(o.eps >= 0, "Adagrad: eps must be >= 0, got ", o.eps);
}

std::array<std::string, kMaxStateBuffers> Adagrad::state_names(size_t) const { return {"sum", "", ""}; }

Tensor Adagrad::initial_state(size_t group, size_t, const Tensor& param) const {
  Tensor sum = empty_like(param);
  sum.fill_(groups_[group].options.initial_accumulator_value);
  return sum;
}

void Adagrad::update(size_t group, std::vector<ParamUpdate>& bucket) {
  const AdagradOptions& o = groups_[group].options;
  visit_floating(bucket.front().param.dtype(), "Adagrad", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const kernels::AdagradRule<T> rule{.eps = T(o.eps), .weight_decay = T(o.weight_decay), .maximize = o.maximize};
    auto coefficients = [&](int64_t step) {
      return std::pair<double, double>{o.lr / (1 + static_cast<double>(step - 1) * o.lr_decay), 0};
    };
    detail::apply_rule<T>("Adagrad", bucket, rule, coefficients, &kernels::cpu::adagrad_step<T>,
                          &kernels::cuda::adagrad_step<T>);
  });
}

}  // namespace ember::optim
