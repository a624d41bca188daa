// 2-D convolution (cross-correlation, like PyTorch) on NCHW tensors, forward and both backwards,
// with channel groups (Conv2dShape::groups): the im2col + gemm path runs once per group on its
// channel slices; s.depthwise() shapes run the direct kernels of conv2d_depthwise.h instead (no
// workspace: the *_workspace sizes are 0 for them).
// defines: ember::kernels::cpu::conv2d_forward, conv2d_backward_input,
//          conv2d_backward_weight, conv2d_*_workspace
#pragma once

#include <cstdint>

#include "ember/kernels/conv2d.h"  // defines: Conv2dShape, shared with kernels/cuda/conv2d.h

namespace ember::kernels::cpu {

// Workspace sizes, in elements of T, for the calls below. They depend on get_num_threads(): call
// the kernel with the same thread count as the size query (one im2col buffer per thread).
int64_t conv2d_forward_workspace(const Conv2dShape& s);
int64_t conv2d_backward_input_workspace(const Conv2dShape& s);
int64_t conv2d_backward_weight_workspace(const Conv2dShape& s);

// y = conv(x, w) + bias. Requires: every size >= 1, strides and dilations >= 1, pads >= 0,
//   out_h(), out_w() >= 1; bias_or_null may be nullptr; workspace holds
//   conv2d_forward_workspace(s) elements. Guarantees: overwrites y; deterministic. float with
//   stride 1 and no dilation (any groups) on an AVX-512 or AVX2 CPU runs a direct kernel (no
//   im2col, the same result for every thread count; a padded input is copied into a zero border
//   first); elsewhere im2col + gemm. The two round differently.
template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    T* workspace);

// dx = d(loss)/dx given dy = d(loss)/dy. Requires as conv2d_forward, workspace of
//   conv2d_backward_input_workspace(s) elements. Guarantees: overwrites dx (positions no window
//   reads get 0); deterministic for a fixed get_num_threads(). float with stride 1, no dilation,
//   padding and pad <= kernel - 1 on an AVX-512 or AVX2 CPU runs the direct forward
//   kernel on dy padded by kernel - 1 - pad with the flipped weights (the same result for every
//   thread count).
template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, T* workspace);

// dw = d(loss)/dw and, when dbias_or_null is not nullptr, dbias = sum of dy over batch and
//   positions. Requires as conv2d_forward, workspace of conv2d_backward_weight_workspace(s)
//   elements. Guarantees: overwrites dw and dbias; deterministic. float with stride 1 and no
//   dilation on an AVX-512 or AVX2 CPU runs a direct kernel (no im2col, the same result
//   for every thread count); elsewhere im2col + gemm over groups of images, the same result for
//   a fixed get_num_threads() (per-thread partial sums over fixed image ranges, added in thread
//   order). The two round differently.
template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null,
                            const Conv2dShape& s, T* workspace);

}  // namespace ember::kernels::cpu
