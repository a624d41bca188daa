// Inverted dropout on one CUDA device, driven by the same counter-based Philox stream as the CPU.
// defines: ember::kernels::cuda::dropout_forward, dropout_backward
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// mask[i] = 1 iff double(ember::philox::uniform(seed, offset, i)) > p, else 0;
// y[i] = mask[i] ? x[i] * T(1 / (1 - p)) : 0. Requires 0 <= p <= 1 and device pointers on the
// stream's device. Guarantees: mask and y are bit for bit those of kernels::cpu::dropout_forward
// for the same (seed, offset). The caller advances its offset by ember::philox::counters_for(n).
template <class T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, double p, uint64_t seed,
                     uint64_t offset, Stream stream);

// dx[i] = mask[i] ? dy[i] * T(1 / (1 - p)) : 0. dx may alias dy.
template <class T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, double p,
                      Stream stream);

}  // namespace ember::kernels::cuda
