// The SGD update of many parameters in few launches (multi-tensor apply), exactly the CPU rule.
// defines: ember::kernels::cuda::SgdHyper, SgdTensor, sgd_update_multi
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// The coefficients shared by every parameter of one launch (one optimizer param group).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

// One parameter: `numel` contiguous elements of param, grad and (when momentum != 0) its buffer.
template <class T>
struct SgdTensor {
  T* param = nullptr;
  const T* grad = nullptr;
  T* momentum_buffer = nullptr;  // required when momentum != 0, ignored otherwise
  int64_t numel = 0;
  bool first_step = false;  // the buffer is (re)initialised to d on this step
};

// For every tensor, per element, kernels::cpu::sgd_update's rule: d = g + weight_decay * p; if
// momentum != 0: buf = first_step ? d : momentum * buf + (1 - dampening) * d,
// d = nesterov ? d + momentum * buf : buf; p -= lr * d. Coefficients are rounded to T first and
// every multiply and add is rounded on its own (no fused multiply-add), so results match the CPU
// kernel's bit for bit where the CPU does not contract either.
// Requires: all pointers on the stream's device; grad not aliasing param. `tensors` is a host
// array of any length; the update is chunked into launches whose argument block stays under the
// 4 KiB kernel parameter limit (up to kSgdTensorsPerLaunch tensors and kSgdBlocksPerLaunch
// blocks of kSgdChunk elements each). Launches asynchronously on `stream`.
inline constexpr int kSgdTensorsPerLaunch = 48;
inline constexpr int kSgdBlocksPerLaunch = 256;
inline constexpr int64_t kSgdChunk = 16384;

template <class T>
void sgd_update_multi(const SgdTensor<T>* tensors, size_t count, const SgdHyper& hyper, Stream stream);

}  // namespace ember::kernels::cuda
