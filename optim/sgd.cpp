#include "ember/optim/sgd.h"

#include "ember/common/error.h"
#include "ember/kernels/cpu/optimizer_step.h"
#include "ember/kernels/cuda/optimizer_step.h"
#include "ember/optim/rule_kernels.h"

namespace ember::optim {

void check_options(const SGDOptions& o) {
  EMBER_CHECK(o.lr >= 0, "SGD: learning rate must be >= 0, got ", o.lr);
  EMBER_CHECK(o.momentum >= 0, "SGD: momentum must be >= 0, got ", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "SGD: weight_decay must be >= 0, got ", o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
              "SGD: nesterov momentum requires momentum > 0 and dampening 0, got momentum ", o.momentum,
              " and dampening ", o.dampening);
}

std::array<std::string, kMaxStateBuffers> SGD::state_names(size_t group) const {
  return {groups_[group].options.momentum != 0 ? "momentum_buffer" : "", "", ""};
}

// The first step sets the buffer to d without reading it (torch.optim.SGD's clone of d).
Tensor SGD::initial_state(size_t, size_t, const Tensor& param) const { return empty_like(param); }

void SGD::update(size_t group, std::vector<ParamUpdate>& bucket) {
  const SGDOptions& o = groups_[group].options;
  visit_floating(bucket.front().param.dtype(), "SGD", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const kernels::SgdRule<T> rule{.lr = T(o.lr), .momentum = T(o.momentum),
                                   .one_minus_dampening = T(1.0 - o.dampening), .weight_decay = T(o.weight_decay),
                                   .use_momentum = o.momentum != 0, .nesterov = o.nesterov, .maximize = o.maximize};
    detail::apply_rule<T>("SGD", bucket, rule, [](int64_t) { return std::pair<double, double>{0, 0}; },
                          &kernels::cpu::sgd_step<T>, &kernels::cuda::sgd_step<T>);
  });
}

}  // namespace ember::optim
