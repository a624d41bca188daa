// One step of stochastic gradient descent with momentum, exactly torch.optim.SGD's update rule.
// defines: ember::kernels::cpu::SgdStep, sgd_update
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

struct SgdStep {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the momentum buffer is (re)initialised to d on this step
};

// Per element, in one pass: d = g + weight_decay * p; if momentum != 0: buf = first_step ? d :
// momentum * buf + (1 - dampening) * d, d = nesterov ? d + momentum * buf : buf; p -= lr * d.
// Requires: momentum_buffer_or_null != nullptr when momentum != 0 (it is then read unless
// first_step, and written). grad may not alias param. Coefficients are rounded to T first.
template <class T>
void sgd_update(T* param, const T* grad, T* momentum_buffer_or_null, int64_t n, const SgdStep& step);

}  // namespace ember::kernels::cpu
