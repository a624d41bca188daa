// Element-wise activations and their backward.
// defines: ember::kernels::cpu::relu_forward, relu_backward
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// y[i] = max(x[i], 0); NaN stays NaN (like PyTorch). x == y (in place) is allowed.
template <class T>
void relu_forward(const T* x, T* y, int64_t n);

// dx[i] = y[i] > 0 ? dy[i] : 0, with y the forward's output. dx may alias dy.
template <class T>
void relu_backward(const T* dy, const T* y, T* dx, int64_t n);

}  // namespace ember::kernels::cpu
