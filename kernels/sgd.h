// What both SGD kernels (kernels/cpu/sgd.h, kernels/cuda/sgd.h) take: one optimizer param
// group's coefficients and the parameters it updates.
// defines: ember::kernels::SgdHyper, SgdTensor
//
// The rule, torch.optim.SGD's, per element: d = g + weight_decay * p; if momentum != 0:
// buf = first_step ? d : momentum * buf + (1 - dampening) * d, d = nesterov ? d + momentum * buf
// : buf; p -= lr * d. Coefficients are rounded to T first.
#pragma once

#include <cstdint>

namespace ember::kernels {

// The coefficients shared by every parameter of one update (one optimizer param group).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

// One parameter: `numel` contiguous elements of param, grad and (when momentum != 0) its buffer.
template <class T>
struct SgdTensor {
  T* param = nullptr;
  const T* grad = nullptr;     // may not alias param
  T* momentum_buffer = nullptr;  // required when momentum != 0, ignored otherwise
  int64_t numel = 0;
  bool first_step = false;  // the buffer is (re)initialised to d on this step
};

}  // namespace ember::kernels
