// The geometry of a 2-D convolution, shared by its CPU (kernels/cpu/conv2d.h), CUDA
// (kernels/cuda/conv2d.h) and cuDNN (kernels/vendor/cudnn_conv.h) kernels.
// defines: ember::kernels::Conv2dShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// x: [batch, in_channels, in_h, in_w]; w: [out_channels, in_channels / groups, kernel_h, kernel_w];
// y: [batch, out_channels, out_h(), out_w()]; bias: [out_channels]. All contiguous. Height and
// width are independent: every kernel honours kernel_h != kernel_w, stride_h != stride_w, and so on.
// groups divides in_channels and out_channels: output channels [g * out/groups, (g+1) * out/groups)
// see only input channels [g * in/groups, (g+1) * in/groups) (PyTorch's groups).
struct Conv2dShape {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0, out_channels = 0, kernel_h = 0,
          kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  // Channels of one group: the weight's dim 1, and the output channels each group computes.
  int64_t group_in() const { return in_channels / groups; }
  int64_t group_out() const { return out_channels / groups; }
  // One input channel per group (out_channels = in_channels * multiplier): every device runs these
  // with a direct kernel of their own instead of the per-group GEMMs.
  bool depthwise() const { return groups > 1 && groups == in_channels; }
  // (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1
  int64_t out_h() const { return (in_h + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (in_w + 2 * pad_w - dilation_w * (kernel_w - 1) - 1) / stride_w + 1; }
};

}  // namespace ember::kernels
