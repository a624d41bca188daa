// The options of 2-D pooling, for the layers nn::MaxPool2d / nn::AvgPool2d and the ops
// nn::functional::max_pool2d / avg_pool2d (both take the kernel size beside them, as PyTorch's).
// defines: ember::nn::MaxPool2dOptions, AvgPool2dOptions, check_max_pool2d_options,
//          check_avg_pool2d_options
#pragma once

#include <cstdint>
#include <optional>

#include "ember/nn/expanding_array.h"

namespace ember::nn {

// Each of stride, padding and dilation is one number for height and width or an {h, w} pair:
// {.stride = {2, 1}} is PyTorch's stride=(2, 1).
struct MaxPool2dOptions {
  OptionalExpandingArray<2> stride;  // >= 1; the kernel size when left out, as PyTorch's
  ExpandingArray<2> padding = 0;     // between 0 and half the effective kernel; counts as -inf
  ExpandingArray<2> dilation = 1;    // >= 1: the window's taps are dilation apart
  bool ceil_mode = false;            // round the output size up (a last partial window)
};

// PyTorch's F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
// divisor_override).
struct AvgPool2dOptions {
  OptionalExpandingArray<2> stride;        // >= 1; the kernel size when left out
  ExpandingArray<2> padding = 0;           // between 0 and half the kernel; counts as 0
  bool ceil_mode = false;                  // round the output size up (a last partial window)
  bool count_include_pad = true;           // divide by the padded window, not its input elements
  std::optional<int64_t> divisor_override;  // divide every window's sum by this (not 0) instead
};

// Throw ember::Error ("max_pool2d: stride must be positive, got 0") when kernel_size or an option
// is out of range. The layers call them at construction and the ops at every call, so both give
// the same message.
void check_max_pool2d_options(const ExpandingArray<2>& kernel_size, const MaxPool2dOptions& options);
void check_avg_pool2d_options(const ExpandingArray<2>& kernel_size, const AvgPool2dOptions& options);

}  // namespace ember::nn
