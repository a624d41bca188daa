// The SGD update of many parameters in few launches (multi-tensor apply), exactly the CPU rule.
// defines: ember::kernels::cuda::sgd_update_multi
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/sgd.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// For every tensor, per element, kernels/sgd.h's rule. Coefficients are rounded to T first and
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
