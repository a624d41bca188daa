// Internal to nn/: what conv2d and conv_transpose2d share. The checks of their operands and of
// their stride, padding, dilation and groups; and the three directions of a 2-D convolution, each
// dispatched to the CPU kernels, cuDNN or the hand-written CUDA kernels as the KernelContext says,
// with their workspaces. conv2d runs them as they are; conv_transpose2d runs them mirrored (its
// forward is conv2d's input gradient, its input gradient conv2d's forward).
// defines: ember::nn::functional::detail::{check_conv_operands, check_conv_geometry, set_conv_geometry,
//          conv_forward, conv_backward_input, conv_backward_weight}
#pragma once

#include "ember/core/kernel_context.h"
#include "ember/kernels/conv2d.h"
#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cuda/conv2d.h"
#include "ember/kernels/vendor/cudnn_conv.h"
#include "ember/nn/expanding_array.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional::detail {

// input and weight defined, 4-D, floating, of one dtype on one device; `weight_layout` names the
// weight's dims in the message ("[out_channels, in_channels, kH, kW]").
inline void check_conv_operands(const char* op, const Tensor& input, const Tensor& weight, const char* weight_layout) {
  check_defined(input, op, "input");
  check_defined(weight, op, "weight");
  EMBER_CHECK(input.dim() == 4, op, ": input must be 4-D [N, C, H, W], got ", input.sizes());
  EMBER_CHECK(weight.dim() == 4, op, ": weight must be 4-D ", weight_layout, ", got ", weight.sizes());
  check_floating(input, op, "input");
  check_same(input, weight, op, "input", "weight");
}

// groups and strides positive, padding non-negative, dilation positive.
inline void check_conv_geometry(const char* op, const ExpandingArray<2>& stride, const ExpandingArray<2>& padding,
                                const ExpandingArray<2>& dilation, int64_t groups) {
  EMBER_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  EMBER_CHECK(stride[0] > 0 && stride[1] > 0, op, ": stride must be positive, got ", compact_str(stride));
  EMBER_CHECK(padding[0] >= 0 && padding[1] >= 0, op, ": padding must be non-negative, got ", compact_str(padding));
  EMBER_CHECK(dilation[0] > 0 && dilation[1] > 0, op, ": dilation must be positive, got ", compact_str(dilation));
}

// The stride, padding, dilation and groups of `s`, from the options' {h, w} pairs.
inline void set_conv_geometry(kernels::Conv2dShape& s, const ExpandingArray<2>& stride,
                              const ExpandingArray<2>& padding, const ExpandingArray<2>& dilation, int64_t groups) {
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = padding[0];
  s.pad_w = padding[1];
  s.dilation_h = dilation[0];
  s.dilation_w = dilation[1];
  s.groups = groups;
}

// y = conv(x, w) + bias (bias may be null), as kernels::cpu::conv2d_forward.
template <class T>
void conv_forward(KernelContext& on, const T* x, const T* w, const T* bias, T* y, const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_forward_workspace(s));
    kernels::cpu::conv2d_forward<T>(x, w, bias, y, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_forward_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_forward<T>(x, w, bias, y, s, space, bytes, on.stream());
  } else {
    kernels::cuda::conv2d_forward<T>(x, w, bias, y, s, on.stream());
  }
}

// dx given dy, as kernels::cpu::conv2d_backward_input.
template <class T>
void conv_backward_input(KernelContext& on, const T* dy, const T* w, T* dx, const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_backward_input_workspace(s));
    kernels::cpu::conv2d_backward_input<T>(dy, w, dx, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_backward_input_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_backward_input<T>(dy, w, dx, s, space, bytes, on.stream());
  } else {
    kernels::cuda::conv2d_backward_input<T>(dy, w, dx, s, on.stream());
  }
}

// dw and (when dbias is not null) dbias given dy and x, as kernels::cpu::conv2d_backward_weight.
template <class T>
void conv_backward_weight(KernelContext& on, const T* dy, const T* x, T* dw, T* dbias,
                          const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_backward_weight_workspace(s));
    kernels::cpu::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_backward_weight_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space, bytes, on.stream());
  } else {
    T* space = on.workspace<T>(kernels::cuda::conv2d_backward_weight_workspace(s));
    kernels::cuda::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space, on.stream());
  }
}

}  // namespace ember::nn::functional::detail
