#include "ember/optim/rmsprop.h"

#include "ember/common/error.h"
#include "ember/kernels/cpu/optimizer_step.h"
#include "ember/kernels/cuda/optimizer_step.h"
#include "ember/optim/rule_kernels.h"

namespace ember::optim {

void check_options(const RMSpropOptions& o) {
  EMBER_CHECK(o.lr >= 0, "RMSprop: learning rate must be >= 0, got ", o.lr);
  EMBER_CHECK(o.eps >= 0, "RMSprop: eps must be >= 0, got ", o.eps);
  EMBER_CHECK(o.momentum >= 0, "RMSprop: momentum must be >= 0, got ", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "RMSprop: weight_decay must be >= 0, got ", o.weight_decay);
  EMBER_CHECK(o.alpha >= 0, "RMSprop: alpha must be >= 0, got ", o.alpha);
}

std::array<std::string, kMaxStateBuffers> RMSprop::state_names(size_t group) const {
  const RMSpropOptions& o = groups_[group].options;
  return {"square_avg", o.momentum > 0 ? "momentum_buffer" : "", o.centered ? "grad_avg" : ""};
}

void RMSprop::update(size_t group, std::vector<ParamUpdate>& bucket) {
  const RMSpropOptions& o = groups_[group].options;
  visit_floating(bucket.front().param.dtype(), "RMSprop", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const kernels::RmspropRule<T> rule{.lr = T(o.lr), .alpha = T(o.alpha), .one_minus_alpha = T(1 - o.alpha),
                                       .eps = T(o.eps), .weight_decay = T(o.weight_decay), .momentum = T(o.momentum),
                                       .centered = o.centered, .use_momentum = o.momentum > 0,
                                       .maximize = o.maximize};
    detail::apply_rule<T>("RMSprop", bucket, rule, [](int64_t) { return std::pair<double, double>{0, 0}; },
                          &kernels::cpu::rmsprop_step<T>, &kernels::cuda::rmsprop_step<T>);
  });
}

}  // namespace ember::optim
