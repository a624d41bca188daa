// Inverted dropout driven by the counter-based Philox stream, and its backward.
// defines: ember::kernels::cpu::dropout_forward, dropout_backward
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// mask[i] = 1 iff ember::philox::uniform(seed, offset, i) > p, else 0; y[i] = mask[i] ? x[i] / (1 - p)
// : 0. Requires 0 <= p <= 1 (p == 1 drops everything, y = 0). Guarantees: the mask depends only on
// (seed, offset, i), never on the thread count, and matches the CUDA kernel for the same seed.
// The caller advances its offset by ember::philox::counters_for(n) after the call.
template <class T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, double p, uint64_t seed,
                     uint64_t offset);

// dx[i] = mask[i] ? dy[i] / (1 - p) : 0. dx may alias dy.
template <class T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, double p);

}  // namespace ember::kernels::cpu
