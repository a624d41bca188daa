// The geometry of a 2-D convolution, shared by its CPU (kernels/cpu/conv2d.h), CUDA
// (kernels/cuda/conv2d.h) and cuDNN (kernels/vendor/cudnn_conv.h) kernels.
// defines: ember::kernels::Conv2dShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// x: [batch, in_channels, in_h, in_w]; w: [out_channels, in_channels, kernel_h, kernel_w];
// y: [batch, out_channels, out_h(), out_w()]; bias: [out_channels]. All contiguous. Height and
// width are independent: every kernel honours kernel_h != kernel_w, stride_h != stride_w, and so on.
struct Conv2dShape {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0, out_channels = 0, kernel_h = 0,
          kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  // (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1
  int64_t out_h() const { return (in_h + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (in_w + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1; }
};

}  // namespace ember::kernels
