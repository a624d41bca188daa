// 2-D pooling on NCHW tensors on one CUDA device (the twin of kernels/cpu/pool.h): max (ceil mode,
// dilation), average, adaptive average and adaptive max, each with its backward.
// defines: ember::kernels::cuda::max_pool2d_forward, max_pool2d_backward, avg_pool2d_forward,
//          avg_pool2d_backward, adaptive_avg_pool2d_forward, adaptive_avg_pool2d_backward,
//          adaptive_max_pool2d_forward, adaptive_max_pool2d_backward
#pragma once

#include <cstdint>

#include "ember/kernels/pool.h"  // defines: Pool2dShape, shared with kernels/cpu/pool.h
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// y = the max of each window; argmax = its index ih * in_w + iw within the input plane.
// Requires what kernels::cpu::max_pool2d_forward requires, with device pointers on the stream's
// device. Guarantees the CPU kernel's conventions: padding counts as -inf, a NaN in a window is
// its max (the last NaN's index), ties keep the first index in row-major window order.
template <class T>
void max_pool2d_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s, Stream stream);

// dx[plane][i] = sum of dy over the outputs of that plane whose argmax is i (overlapping windows
// accumulate). Requires argmax from max_pool2d_forward on the same shape. Guarantees: overwrites
// dx; deterministic, no atomics (each input element gathers from the windows that contain it,
// in output order, as the CPU kernel sums).
template <class T>
void max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const Pool2dShape& s, Stream stream);

// The twins of kernels::cpu::avg_pool2d_forward / backward (same requirements, device pointers).
// The backward gathers, per input element, dy / divisor of the windows holding it in output
// order: the CPU's sum order, without atomics.
template <class T>
void avg_pool2d_forward(const T* x, T* y, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override,
                        Stream stream);
template <class T>
void avg_pool2d_backward(const T* dy, T* dx, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override,
                         Stream stream);

// The twins of kernels::cpu::adaptive_avg_pool2d_forward / backward (the backward gathers, as above).
template <class T>
void adaptive_avg_pool2d_forward(const T* x, T* y, const AdaptivePool2dShape& s, Stream stream);
template <class T>
void adaptive_avg_pool2d_backward(const T* dy, T* dx, const AdaptivePool2dShape& s, Stream stream);

// The twins of kernels::cpu::adaptive_max_pool2d_forward / backward (same argmax convention).
template <class T>
void adaptive_max_pool2d_forward(const T* x, T* y, int64_t* argmax, const AdaptivePool2dShape& s, Stream stream);
template <class T>
void adaptive_max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const AdaptivePool2dShape& s,
                                  Stream stream);

}  // namespace ember::kernels::cuda
