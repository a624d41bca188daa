// Softmax and log-softmax over any dimension, negative log-likelihood and cross-entropy (fused,
// with class weights, an ignored label and label smoothing); mean squared error (fused); with
// backwards. The twins of kernels/cuda/loss.h.
// defines: ember::kernels::cpu::softmax_forward, softmax_backward, nll_loss_forward,
//          nll_loss_backward, cross_entropy_forward, cross_entropy_backward, mse_loss_forward,
//          mse_loss_backward
#pragma once

#include <cstdint>

#include "ember/kernels/loss.h"

namespace ember::kernels::cpu {

// Softmax over the middle dimension of a contiguous [outer, size, inner] tensor (SoftmaxShape),
// the max subtracted first: y = exp(x - m) / sum exp(x - m), or with s.log
// y = x - m - log(sum exp(x - m)). Requires size >= 1. y may alias x.
template <class T>
void softmax_forward(const T* x, T* y, const SoftmaxShape& s);

// The input gradient from the forward's output y, summing over the softmax dimension:
// log: dx = dy - exp(y) * sum dy; softmax: dx = y * (dy - sum dy * y). dx may alias dy.
template <class T>
void softmax_backward(const T* dy, const T* y, T* dx, const SoftmaxShape& s);

// Classification losses over [outer, classes, inner] scores and [outer, inner] targets
// (ClassLossShape). weight: [classes] or nullptr (all 1). For each row r with target t:
// row_weight[r] = w[t], or 0 when t == ignore_index (then the loss row is 0 too); the mean of the
// losses is sum(loss_rows) / sum(row_weight), as PyTorch's.

// loss_rows[r] = -w[t] * logp[r, t]. (label_smoothing is not read.)
template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, const T* weight, T* loss_rows, T* row_weight,
                      const ClassLossShape& s);

// dlogp = 0 except dlogp[r, t] = -w[t] * grad_rows[r]. Overwrites dlogp.
template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, const T* weight, T* dlogp,
                       const ClassLossShape& s);

// log_probs = log_softmax(logits) over the classes (kept for the backward) and, with
// e = label_smoothing and C = classes,
// loss_rows[r] = -(1 - e) * w[t] * log_probs[r, t] - (e / C) * sum_c w[c] * log_probs[r, c].
template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, const T* weight, T* log_probs, T* loss_rows,
                           T* row_weight, const ClassLossShape& s);

// dlogits[r, c] = grad_rows[r] * ((1 - e) * w[t] * (p_c - [c == t]) + (e / C) * (W * p_c - w[c])),
// p = exp(log_probs), W = *weight_sum (the sum of the class weights; read only with weight and
// smoothing, C without weight); 0 in ignored rows. Overwrites dlogits.
template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* weight, const T* weight_sum,
                            const T* grad_rows, T* dlogits, const ClassLossShape& s);

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
