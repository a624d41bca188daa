// Layer normalisation over the rows of [rows, cols] on one CUDA device: the twins of
// kernels/cpu/layer_norm.h, with the same arguments plus a trailing stream.
// defines: ember::kernels::cuda::layer_norm_forward, layer_norm_backward
//
// Requires device pointers on the stream's device; launches asynchronously on `stream`. T is
// float or double; row sums are taken in double, as on the CPU. Each row is one warp's (a
// shuffle reduction, no shared memory); the parameter gradients give each column one thread,
// which walks the rows in order (coalesced across a warp's columns).
#pragma once

#include <cstdint>

#include "ember/kernels/layer_norm.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// As kernels::cpu::layer_norm_forward.
template <class T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd, double eps,
                        const LayerNormShape& s, Stream stream);

// As kernels::cpu::layer_norm_backward.
template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx, T* dweight,
                         T* dbias, const LayerNormShape& s, Stream stream);

}  // namespace ember::kernels::cuda
