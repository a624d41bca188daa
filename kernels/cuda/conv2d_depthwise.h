// Hand-written depthwise conv2d on CUDA (groups == in_channels, out_channels = in_channels *
// multiplier): direct kernels, no implicit GEMM. Internal to kernels/cuda: conv2d_forward,
// conv2d_backward_input and conv2d_backward_weight (kernels/cuda/conv2d.h) route every
// Conv2dShape::depthwise() here.
// defines: ember::kernels::cuda::conv2d_depthwise_forward, conv2d_depthwise_backward_input,
//          conv2d_depthwise_backward_weight
#pragma once

#include "ember/kernels/conv2d.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// Require s.depthwise() and what kernels/cuda/conv2d.h requires; no workspace. Output channel k
// reads input channel k / (out_channels / in_channels). Deterministic (no atomics).

// y = conv(x, w) + bias (bias_or_null may be nullptr): one thread per output element.
template <class T>
void conv2d_depthwise_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                              Stream stream);

// dx given dy: one thread per input element, gathering the outputs whose windows read it.
template <class T>
void conv2d_depthwise_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, Stream stream);

// dw given dy and x (no bias gradient): one block per weight element, a tree over its block.
template <class T>
void conv2d_depthwise_backward_weight(const T* dy, const T* x, T* dw, const Conv2dShape& s, Stream stream);

}  // namespace ember::kernels::cuda
