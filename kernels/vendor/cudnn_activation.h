// relu through cuDNN (cudnnActivationForward / Backward, CUDNN_ACTIVATION_RELU): the vendor
// twin of kernels/cuda/activation.h, chosen when ember::backend() is Backend::Vendor.
// defines: ember::kernels::vendor::cudnn_relu_forward, cudnn_relu_backward
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::vendor {

// y[i] = max(x[i], 0), NaN propagated. Requires device pointers of `device` (the current device),
// T float or double. Launches on `stream` with this thread's cuDNN handle for `device`. Throws
// ember::Error naming the cuDNN call on failure.
template <class T>
void cudnn_relu_forward(const T* x, T* y, int64_t n, int device, Stream stream);

// dx[i] = y[i] > 0 ? dy[i] : 0 with y the forward's output (cuDNN is given y as both x and y:
// relu(y) = y and y > 0 exactly where x > 0).
template <class T>
void cudnn_relu_backward(const T* dy, const T* y, T* dx, int64_t n, int device, Stream stream);

}  // namespace ember::kernels::vendor
