// The options of a 2-D convolution, for the layer nn::Conv2d and the op nn::functional::conv2d.
// defines: ember::nn::Conv2dOptions, check_conv2d_options
#pragma once

#include <cstdint>

#include "ember/nn/expanding_array.h"

namespace ember::nn {

// Each of stride, padding and dilation is one number for height and width or an {h, w} pair:
// {.stride = {2, 1}, .padding = {1, 0}} is PyTorch's stride=(2, 1), padding=(1, 0).
struct Conv2dOptions {
  ExpandingArray<2> stride = 1;    // >= 1
  ExpandingArray<2> padding = 0;   // >= 0, zeros on both sides
  ExpandingArray<2> dilation = 1;  // >= 1
  int64_t groups = 1;              // >= 1, divides in and out channels; weight [out, in / groups, kH, kW]
  // nn::Conv2d only: whether the layer has a bias parameter. functional::conv2d takes the bias
  // tensor itself (undefined for none) and ignores this.
  bool bias = true;
};

// Throws ember::Error ("conv2d: stride must be positive, got 0") when an option is out of range. nn::Conv2d calls it at construction and
// functional::conv2d at every call, so both give the same message.
void check_conv2d_options(const Conv2dOptions& options);

}  // namespace ember::nn
