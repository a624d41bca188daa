// 2-D max pooling on NCHW tensors (floor mode, PyTorch's argmax convention), and its backward.
// defines: ember::kernels::cpu::max_pool2d_forward, max_pool2d_relu_forward,
//          max_pool2d_backward
#pragma once

#include <cstdint>

#include "ember/kernels/pool.h"  // defines: Pool2dShape, shared with kernels/cuda/pool.h

namespace ember::kernels::cpu {

// y = the max of each window; argmax = its index ih * in_w + iw within the input plane.
// Requires: sizes, kernel and stride >= 1; 0 <= pad <= kernel / 2 (so every window holds an input
//   element); out_h(), out_w() >= 1. Padding counts as -inf. Guarantees: a NaN in a window is
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

}  // namespace ember::kernels::cpu
