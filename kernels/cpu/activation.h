// Element-wise activations and their backward.
// defines: ember::kernels::cpu::relu_forward, relu_backward, activation_forward, activation_backward
#pragma once

#include <cstdint>

#include "ember/kernels/activation.h"

namespace ember::kernels::cpu {

// y[i] = max(x[i], 0); NaN stays NaN (like PyTorch). x == y (in place) is allowed.
template <class T>
void relu_forward(const T* x, T* y, int64_t n);

// dx[i] = y[i] > 0 ? dy[i] : 0, with y the forward's output. dx may alias dy.
template <class T>
void relu_backward(const T* dy, const T* y, T* dx, int64_t n);

// y[i] = op(x[i]) for the activations of kernels/activation.h; param is LeakyRelu's
// negative_slope or Elu's alpha (not read by the others). x == y (in place) is allowed.
// float uses kernels/cpu/vector_math.h (vectorised, a few ulp), double the std:: functions.
template <class T>
void activation_forward(Activation op, double param, const T* x, T* y, int64_t n);

// dx[i] = dy[i] * op'(...) where `saved` is the forward's output y for Sigmoid and Tanh
// (backward_reads_output) and its input x for the others. dx may alias dy.
template <class T>
void activation_backward(Activation op, double param, const T* dy, const T* saved, T* dx, int64_t n);

}  // namespace ember::kernels::cpu
