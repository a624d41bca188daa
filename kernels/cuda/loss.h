// Softmax and log-softmax over any dimension, negative log-likelihood, cross-entropy (fused, with
// class weights, an ignored label and label smoothing) and mean squared error (fused) on one CUDA
// device, with backwards.
// defines: ember::kernels::cuda::softmax_forward, softmax_backward, nll_loss_forward,
//          nll_loss_backward, cross_entropy_forward, cross_entropy_backward, mse_loss_forward,
//          mse_loss_backward
#pragma once

#include <cstdint>

#include "ember/kernels/loss.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// The twins of kernels/cpu/loss.h (see there for the formulas): device pointers on the stream's
// device, T float or double. A target out of range (and not ignore_index) gives a NaN loss /
// gradient row here instead of reading out of bounds. Softmax rows (inner == 1) of up to 1024
// elements take one warp each, longer rows one block each, reducing with shuffles; with inner > 1
// each thread takes one (outer, inner) column, neighbouring threads reading neighbouring columns.
// The classification losses' rows are laid out the same way. Everything launches asynchronously on
// `stream`.

// Softmax (or log-softmax, s.log) over the middle dimension of [outer, size, inner]. y may alias x.
template <class T>
void softmax_forward(const T* x, T* y, const SoftmaxShape& s, Stream stream);

// log: dx = dy - exp(y) * sum dy; softmax: dx = y * (dy - sum dy * y). dx may alias dy.
template <class T>
void softmax_backward(const T* dy, const T* y, T* dx, const SoftmaxShape& s, Stream stream);

// loss_rows[r] = -w[t] * logp[r, t], row_weight[r] = w[t] (both 0 when t == ignore_index).
template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, const T* weight, T* loss_rows, T* row_weight,
                      const ClassLossShape& s, Stream stream);

// dlogp = 0 except dlogp[r, t] = -w[t] * grad_rows[r]. Overwrites dlogp.
template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, const T* weight, T* dlogp,
                       const ClassLossShape& s, Stream stream);

// One kernel: log_probs = log_softmax(logits) over the classes (kept for the backward), the
// weighted, smoothed loss of each row and its weight.
template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, const T* weight, T* log_probs, T* loss_rows,
                           T* row_weight, const ClassLossShape& s, Stream stream);

// One kernel: the logits' gradient; weight_sum is a device pointer to the sum of the class
// weights (read only with weight and label smoothing).
template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* weight, const T* weight_sum,
                            const T* grad_rows, T* dlogits, const ClassLossShape& s, Stream stream);

// Squared error of n elements: reduce == false: out[i] = (x[i] - t[i])^2 (out has n elements);
// reduce == true: out[0] = scale * sum_i (x[i] - t[i])^2 (one block; scale 1 for a sum, 1/n for a mean).
template <class T>
void mse_loss_forward(const T* x, const T* t, T* out, int64_t n, bool reduce, double scale, Stream stream);

// dx[i] = 2 (x[i] - t[i]) * g_i and, when dt != nullptr, dt[i] = -dx[i], where
// g_i = scale * grad[0] when grad_is_scalar, else grad[i]. dx and dt are overwritten.
template <class T>
void mse_loss_backward(const T* x, const T* t, const T* grad, bool grad_is_scalar, double scale, T* dx, T* dt,
                       int64_t n, Stream stream);

}  // namespace ember::kernels::cuda
