// max_pool2d through cuDNN (cudnnPoolingForward / Backward): the vendor twin of
// kernels/cuda/pool.h, chosen when ember::backend() is Backend::Vendor.
// defines: ember::kernels::vendor::cudnn_max_pool2d_forward, cudnn_max_pool2d_backward
#pragma once

#include "ember/kernels/pool.h"  // defines: Pool2dShape
#include "ember/kernels/stream.h"

namespace ember::kernels::vendor {

// y = the max of each window (padding excluded, i.e. -inf; floor mode; NaN propagated), as
// kernels::cuda::max_pool2d_forward but without argmax. Requires contiguous NCHW device memory
// of `device` (the current device) with every size and the element count below 2^31, T float or
// double. Throws ember::Error naming the cuDNN call on failure.
template <class T>
void cudnn_max_pool2d_forward(const T* x, T* y, const Pool2dShape& s, int device, Stream stream);

// dx = the gradient routed to each window's max (cuDNN finds it again from x and y, so it needs
// both; overlapping windows accumulate). Uses CUDNN_POOLING_MAX_DETERMINISTIC, the
// deterministic variant of CUDNN_POOLING_MAX. Ties may be broken differently from ember's
// kernels (first index in window order); inputs without ties give the same dx. Overwrites dx.
template <class T>
void cudnn_max_pool2d_backward(const T* x, const T* y, const T* dy, T* dx, const Pool2dShape& s, int device,
                               Stream stream);

}  // namespace ember::kernels::vendor
