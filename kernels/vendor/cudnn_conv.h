// cuDNN convolution under the same shapes as kernels::cuda::conv2d_* (kernels/cuda/conv2d.h).
// defines: ember::kernels::vendor::conv2d_forward, conv2d_backward_input, conv2d_backward_weight,
//          conv2d_*_workspace
//
// Descriptors are built per call (cheap); the algorithm is picked once per shape, dtype and device
// by cuDNN's heuristics (cudnnGet*Algorithm_v7, no benchmarking runs, so calls stay capturable in
// a CUDA graph) and cached per thread. Convolutions run with FMA math (no tensor-core algorithm is
// picked and the descriptor's math type is CUDNN_FMA_MATH), so FP32 stays FP32 (no TF32 rounding)
// and the vendor path is a true reference for the hand-written one.
#pragma once

#include <cstddef>

#include "ember/kernels/conv2d.h"  // defines: Conv2dShape
#include "ember/kernels/stream.h"

namespace ember::kernels::vendor {

// Workspace bytes the matching call below needs for shape `s` and T (float or double) on the
// current device; also picks and caches the algorithm. `stream` binds the thread's handle.
template <class T>
size_t conv2d_forward_workspace(const Conv2dShape& s, Stream stream);
template <class T>
size_t conv2d_backward_input_workspace(const Conv2dShape& s, Stream stream);
template <class T>
size_t conv2d_backward_weight_workspace(const Conv2dShape& s, Stream stream);

// Same contracts as kernels::cuda::conv2d_* (contiguous NCHW, batch >= 0), with a device
// workspace of at least the queried bytes (may be nullptr when that is 0). Every size must fit
// cuDNN's 32-bit ints. Throws ember::Error when cuDNN fails or the workspace is too small.
template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    void* workspace, size_t workspace_bytes, Stream stream);
template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, void* workspace,
                           size_t workspace_bytes, Stream stream);
// dbias_or_null may be nullptr.
template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null, const Conv2dShape& s,
                            void* workspace, size_t workspace_bytes, Stream stream);

}  // namespace ember::kernels::vendor
