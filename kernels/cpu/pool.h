// 2-D pooling on NCHW tensors, as PyTorch's: max (floor or ceil mode, dilation, PyTorch's argmax
// convention), average, adaptive average and adaptive max, each with its backward.
// defines: ember::kernels::cpu::max_pool2d_forward, max_pool2d_relu_forward,
//          max_pool2d_backward, avg_pool2d_forward, avg_pool2d_backward,
//          adaptive_avg_pool2d_forward, adaptive_avg_pool2d_backward,
//          adaptive_max_pool2d_forward, adaptive_max_pool2d_backward
#pragma once

#include <cstdint>

#include "ember/kernels/pool.h"  // defines: Pool2dShape, shared with kernels/cuda/pool.h

namespace ember::kernels::cpu {

// y = the max of each window; argmax = its index ih * in_w + iw within the input plane.
// Requires: sizes, kernel, stride and dilation >= 1; 0 <= pad <= effective kernel / 2;
//   out_h(), out_w() >= 1. Padding counts as -inf. Guarantees: a NaN in a window is
//   its max (the last NaN's index); ties keep the first index in row-major window order.
template <class T>
void max_pool2d_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s);

// Same as max_pool2d_forward followed by relu on y (y = max(pool, 0), NaN stays NaN); argmax is
// still the pool's, so the backward is max_pool2d_backward of dy masked by y > 0.
template <class T>
void max_pool2d_relu_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s);

// dx = 0, then dx[plane][argmax] += dy for every output (overlapping windows accumulate).
// Requires: argmax from max_pool2d_forward on the same shape. Guarantees: overwrites dx;
//   deterministic (each plane is summed by one thread in output order).
template <class T>
void max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const Pool2dShape& s);

// y = the sum of each window / its divisor (avg_pool_divisor: divisor_override when not 0, else the
// window clipped to the padded input when count_include_pad, else the input elements it covers).
// Requires: as max_pool2d_forward, dilation 1. Padding counts as 0.
template <class T>
void avg_pool2d_forward(const T* x, T* y, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override);

// dx = 0, then every window's input elements += dy / its divisor, in output order (so the CUDA
// twin's gather, which sums in the same order, gives the same bits). Overwrites dx.
template <class T>
void avg_pool2d_backward(const T* dy, T* dx, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override);

// y[oh, ow] = the mean of x over rows [adaptive_start(oh), adaptive_end(oh)) and the same columns.
// out 1x1 (global average pooling) is a vectorised per-plane sum.
template <class T>
void adaptive_avg_pool2d_forward(const T* x, T* y, const AdaptivePool2dShape& s);

// dx = 0, then every window's elements += dy / its size, in output order. Overwrites dx.
template <class T>
void adaptive_avg_pool2d_backward(const T* dy, T* dx, const AdaptivePool2dShape& s);

// y = the max of each adaptive window, argmax its index ih * in_w + iw in the plane; a NaN is the
// max (the last NaN), ties keep the first index, as max_pool2d_forward.
template <class T>
void adaptive_max_pool2d_forward(const T* x, T* y, int64_t* argmax, const AdaptivePool2dShape& s);

// dx = 0, then dx[plane][argmax] += dy in output order. Overwrites dx.
template <class T>
void adaptive_max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const AdaptivePool2dShape& s);

}  // namespace ember::kernels::cpu
