// Row-wise log-softmax, negative log-likelihood and their fusion, cross-entropy; mean squared error
// (fused); with backwards. The twins of kernels/cuda/loss.h.
// defines: ember::kernels::cpu::log_softmax_forward, log_softmax_backward, nll_loss_forward,
//          nll_loss_backward, cross_entropy_forward, cross_entropy_backward, mse_loss_forward,
//          mse_loss_backward
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// All matrices are [rows, cols], contiguous; targets are [rows] with 0 <= target[i] < cols
// (checked by the caller). Every row is independent; rows run in parallel when there are many.

// y[i, j] = x[i, j] - max_i - log(sum_j exp(x[i, j] - max_i)). Requires cols >= 1. y may alias x.
template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols);

// dx[i, j] = dy[i, j] - exp(y[i, j]) * sum_j dy[i, j], y the forward's output. dx may alias dy.
template <class T>
void log_softmax_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols);

// loss_rows[i] = -logp[i, target[i]].
template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, T* loss_rows, int64_t rows,
                      int64_t cols);

// dlogp = 0 except dlogp[i, target[i]] = -grad_rows[i]. Overwrites dlogp.
template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, T* dlogp, int64_t rows,
                       int64_t cols);

// log_probs_out = log_softmax(logits) (kept for the backward), loss_rows[i] = -log_probs[i, t_i].
template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* log_probs_out, T* loss_rows,
                           int64_t rows, int64_t cols);

// dlogits[i, j] = (exp(log_probs[i, j]) - (j == target[i])) * grad_rows[i]. Overwrites dlogits.
template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* grad_rows,
                            T* dlogits, int64_t rows, int64_t cols);

// Squared error of n elements: reduce == false: out[i] = (x[i] - t[i])^2 (out has n elements);
// reduce == true: out[0] = scale * sum_i (x[i] - t[i])^2, summed in double (scale 1 for a sum, 1/n
// for a mean; n == 0 gives 0).
template <class T>
void mse_loss_forward(const T* x, const T* t, T* out, int64_t n, bool reduce, double scale);

// dx[i] = 2 (x[i] - t[i]) * g_i and, when dt != nullptr, dt[i] = -dx[i], where
// g_i = scale * grad[0] when grad_is_scalar, else grad[i]. dx and dt are overwritten.
template <class T>
void mse_loss_backward(const T* x, const T* t, const T* grad, bool grad_is_scalar, double scale, T* dx,
                       T* dt, int64_t n);

}  // namespace ember::kernels::cpu
