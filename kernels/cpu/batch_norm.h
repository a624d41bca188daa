// Batch normalisation over [N, C, spatial] (kernels/batch_norm.h): the training forward with its
// batch statistics and running-stat update, the evaluation forward, and the backward of both.
// defines: ember::kernels::cpu::batch_norm_forward_training, batch_norm_forward_eval,
//          batch_norm_backward
//
// weight and bias ([C]) may be null: a null weight counts as 1, a null bias as 0. Per-channel
// sums are taken in double for float and double alike, two passes (mean, then the squared
// deviations), so a large common offset does not cancel the variance away. Each sum runs over
// fixed shards of the batch added in order (Note [batch norm in memory order] in
// batch_norm.cpp): the results are the same bits for every thread count.
#pragma once

#include <cstdint>

#include "ember/kernels/batch_norm.h"

namespace ember::kernels::cpu {

// Per channel c: mean[c] and the biased variance var over its N * spatial values;
// save_mean[c] = mean, save_invstd[c] = 1 / sqrt(var + eps);
// y = (x - mean) * invstd * weight[c] + bias[c].
// When running_mean and running_var are not null (both or neither), they are updated in place:
// running = (1 - momentum) * running + momentum * stat, with the unbiased variance
// var * n / (n - 1) for running_var. Requires n = N * spatial > 1 (the caller checks).
template <class T>
void batch_norm_forward_training(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd,
                                 T* running_mean, T* running_var, double momentum, double eps,
                                 const BatchNormShape& s);

// y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c], with given statistics (the running
// ones). When save_invstd is not null it receives 1 / sqrt(var[c] + eps), for the backward.
template <class T>
void batch_norm_forward_eval(const T* x, const T* mean, const T* var, const T* weight, const T* bias, T* y,
                             T* save_invstd, double eps, const BatchNormShape& s);

// The backward of either forward, given its mean and invstd per channel (the batch's for
// `training`, the running statistics' otherwise), with xhat = (x - mean) * invstd:
//   dbias[c] = sum dy, dweight[c] = sum dy * xhat,
//   training: dx = weight * invstd * (dy - dbias[c] / n - xhat * dweight[c] / n),
//   eval:     dx = weight * invstd * dy.
// dx, dweight and dbias may each be null (not wanted).
template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx,
                         T* dweight, T* dbias, bool training, const BatchNormShape& s);

}  // namespace ember::kernels::cpu
