// Element-wise activations on one CUDA device, and their backward (the twins of kernels/cpu/activation.h).
// defines: ember::kernels::cuda::relu_forward, relu_backward, activation_forward, activation_backward
#pragma once

#include <cstdint>

#include "ember/kernels/activation.h"

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// y[i] = max(x[i], 0); NaN stays NaN (like PyTorch and the CPU kernel). x == y (in place) is
// allowed. Requires device pointers on the stream's device; launches asynchronously on `stream`.
// T is float or double. float uses 16-byte vector loads when x and y are both 16-byte aligned.
template <class T>
void relu_forward(const T* x, T* y, int64_t n, Stream stream);

// dx[i] = y[i] > 0 ? dy[i] : 0, with y the forward's output. dx may alias dy.
template <class T>
void relu_backward(const T* dy, const T* y, T* dx, int64_t n, Stream stream);

// y[i] = op(x[i]) for the activations of kernels/activation.h (param: LeakyRelu's
// negative_slope, Elu's alpha). As relu_forward: device pointers, asynchronous on `stream`, in
// place allowed, float4 loads for 16-byte aligned float data.
template <class T>
void activation_forward(Activation op, double param, const T* x, T* y, int64_t n, Stream stream);

// dx[i] = dy[i] * op'(...), `saved` the forward's output for Sigmoid and Tanh, its input otherwise
// (backward_reads_output). dx may alias dy.
template <class T>
void activation_backward(Activation op, double param, const T* dy, const T* saved, T* dx, int64_t n, Stream stream);

}  // namespace ember::kernels::cuda
