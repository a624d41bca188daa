// The geometry of 2-D pooling, shared by its CPU (kernels/cpu/pool.h), CUDA (kernels/cuda/pool.h)
// and cuDNN (kernels/vendor/cudnn_pool.h) kernels.
// defines: ember::kernels::Pool2dShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// x: [batch, channels, in_h, in_w]; y and argmax: [batch, channels, out_h(), out_w()]. Height and
// width are independent (kernel_h != kernel_w, stride_h != stride_w, pad_h != pad_w).
struct Pool2dShape {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  // Floor mode: (in + 2 * pad - kernel) / stride + 1.
  int64_t out_h() const { return (in_h + 2 * pad_h - kernel_h) / stride_h + 1; }
  int64_t out_w() const { return (in_w + 2 * pad_w - kernel_w) / stride_w + 1; }
};

}  // namespace ember::kernels
