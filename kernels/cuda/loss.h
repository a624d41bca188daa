// Row-wise log-softmax, negative log-likelihood, cross-entropy (fused) and mean squared error (fused)
// on one CUDA device, with backwards.
// defines: ember::kernels::cuda::log_softmax_forward, log_softmax_backward, nll_loss_forward,
//          nll_loss_backward, cross_entropy_forward, cross_entropy_backward, mse_loss_forward,
//          mse_loss_backward
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// The twins of kernels/cpu/loss.h: all matrices [rows, cols], contiguous, device pointers on the
// stream's device; targets [rows] with 0 <= target[i] < cols (checked by the caller; a target out
// of range gives a NaN loss / gradient row here instead of reading out of bounds). T is float or
// double. Row reductions subtract the row max first; rows of up to 1024 columns take one warp
// each, longer rows one block each. Everything launches asynchronously on `stream`.

// y[i, j] = x[i, j] - max_i - log(sum_j exp(x[i, j] - max_i)). y may alias x.
template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, Stream stream);

// dx[i, j] = dy[i, j] - exp(y[i, j]) * sum_j dy[i, j], y the forward's output. dx may alias dy.
template <class T>
void log_softmax_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols, Stream stream);

// loss_rows[i] = -logp[i, target[i]].
template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, T* loss_rows, int64_t rows, int64_t cols,
                      Stream stream);

// dlogp = 0 except dlogp[i, target[i]] = -grad_rows[i]. Overwrites dlogp.
template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, T* dlogp, int64_t rows, int64_t cols,
                       Stream stream);

// One kernel: log_probs_out = log_softmax(logits) (kept for the backward) and
// loss_rows[i] = -log_probs[i, target[i]].
template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* log_probs_out, T* loss_rows, int64_t rows,
                           int64_t cols, Stream stream);

// One kernel: dlogits[i, j] = (exp(log_probs[i, j]) - (j == target[i])) * grad_rows[i]. Overwrites dlogits.
template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* grad_rows, T* dlogits,
                            int64_t rows, int64_t cols, Stream stream);

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
