// The optimizers' updates on a GPU: each optimizer one fused multi-tensor kernel that updates many
// parameters per launch, by the rules of kernels/optimizer_step.h (the CPU kernels' rules).
// defines: ember::kernels::cuda::{sgd_step, adam_step, rmsprop_step, adagrad_step},
//          kOptimizerTensorsPerLaunch, kOptimizerBlocksPerLaunch, kOptimizerChunk
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/optimizer_step.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// Requires: all pointers on the stream's device; grad not aliasing param; the buffers the rule
// uses non-null. `tensors` is a host array of any length; the update is chunked into launches
// whose argument block stays under the 4 KiB kernel parameter limit (up to
// kOptimizerTensorsPerLaunch tensors and kOptimizerBlocksPerLaunch blocks of kOptimizerChunk
// elements each). Launches asynchronously on `stream`.
inline constexpr int kOptimizerTensorsPerLaunch = 32;
inline constexpr int kOptimizerBlocksPerLaunch = 256;
inline constexpr int64_t kOptimizerChunk = 16384;

template <class T>
void sgd_step(const OptimizerTensor<T>* tensors, size_t count, const SgdRule<T>& rule, Stream stream);
template <class T>
void adam_step(const OptimizerTensor<T>* tensors, size_t count, const AdamRule<T>& rule, Stream stream);
template <class T>
void rmsprop_step(const OptimizerTensor<T>* tensors, size_t count, const RmspropRule<T>& rule, Stream stream);
template <class T>
void adagrad_step(const OptimizerTensor<T>* tensors, size_t count, const AdagradRule<T>& rule, Stream stream);

}  // namespace ember::kernels::cuda
