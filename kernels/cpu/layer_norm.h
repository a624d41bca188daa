// Layer normalisation over the rows of [rows, cols] (kernels/layer_norm.h): the forward with
// its per-row statistics, and the backward.
// defines: ember::kernels::cpu::layer_norm_forward, layer_norm_backward
//
// weight and bias ([cols]) are both null (no affine) or both given. Row sums are taken in double
// for float and double alike, two passes (mean, then the squared deviations), as batch_norm's;
// the parameter gradients sum each block of 64 rows in T and the blocks in double.
// Rows are split between threads; the backward makes one pass over dy and x, the parameter
// gradients summed per fixed block of rows and then over the blocks in order, so every sum runs
// in the same order whatever the thread count.
#pragma once

#include <cstdint>

#include "ember/kernels/layer_norm.h"

namespace ember::kernels::cpu {

// Per row r: mean and the biased variance var over its cols values; save_mean[r] = mean,
// save_invstd[r] = 1 / sqrt(var + eps); y = (x - mean) * invstd * weight[j] + bias[j].
template <class T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd, double eps,
                        const LayerNormShape& s);

// The backward, given the forward's mean and invstd per row, with xhat = (x - mean) * invstd and
// g = dy * weight (dy without weight):
//   dx = invstd * (g - mean_j(g) - xhat * mean_j(g * xhat))  (the means over the row),
//   dweight[j] = sum_r dy * xhat, dbias[j] = sum_r dy.
// dx, dweight and dbias may each be null (not wanted).
template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx, T* dweight,
                         T* dbias, const LayerNormShape& s);

}  // namespace ember::kernels::cpu
