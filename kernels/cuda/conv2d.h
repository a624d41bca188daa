// Hand-written 2-D convolution (cross-correlation, like PyTorch) on NCHW tensors in CUDA device
// memory, forward and both backwards, as implicit GEMMs: each block gathers its tile of the
// virtual im2col matrix straight from the input (padding, stride and dilation handled by bounds
// checks), so no im2col buffer exists in device memory.
// Channel groups (Conv2dShape::groups) run as grid slices, one ungrouped GEMM per group on its
// channel slices; s.depthwise() shapes run the direct kernels of conv2d_depthwise.h instead.
// defines: ember::kernels::cuda::conv2d_forward, conv2d_backward_input,
//          conv2d_backward_weight, conv2d_backward_weight_workspace
#pragma once

#include <cstdint>

#include "ember/kernels/conv2d.h"  // defines: Conv2dShape (x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q])
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// All tensors contiguous, on the stream's device; T is float or double. Requires what the CPU
// kernels require (sizes >= 1 except the batch, which may be 0; strides, dilations >= 1; pads
// >= 0; out_h(), out_w() >= 1), and each image's C * H * W, K * P * Q and the weight's K * C * R * S
// below 2^31 elements (throws ember::Error otherwise). Launches asynchronously on `stream`.

// y = conv(x, w) + bias (bias_or_null may be nullptr). GEMM view: rows = K out channels,
// columns = N * P * Q output pixels, reduction over C * R * S. Overwrites y; deterministic.
template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    Stream stream);

// dx given dy. GEMM view: rows = C, columns = N * H * W input pixels, reduction over K * R * S,
// where (k, r, s) contributes to input pixel (h, w) only if (h + pad - r * dilation) / stride is
// an integer in [0, P) (and likewise for w). Overwrites dx (pixels no window reads get 0).
template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, Stream stream);

// Elements of T that conv2d_backward_weight needs as workspace (0 when it needs none): the batch
// is split into groups of images whose partial weight gradients are summed in a second pass.
int64_t conv2d_backward_weight_workspace(const Conv2dShape& s);

// dw and, when dbias_or_null is not nullptr, dbias = sum of dy over batch and positions. GEMM view
// of dw: rows = K, columns = C * R * S, reduction over each group's images and P * Q positions.
// workspace holds conv2d_backward_weight_workspace(s) elements (may be nullptr when that is 0).
// Overwrites dw and dbias; deterministic (fixed summation order, no atomics).
template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null, const Conv2dShape& s,
                            T* workspace, Stream stream);

}  // namespace ember::kernels::cuda
