// The options of 2-D max pooling, for the layer nn::MaxPool2d and the op nn::functional::max_pool2d
// (both take the kernel size beside them, as PyTorch's).
// defines: ember::nn::MaxPool2dOptions, check_max_pool2d_options
#pragma once

#include "ember/nn/expanding_array.h"

namespace ember::nn {

// Each of stride, padding and dilation is one number for height and width or an {h, w} pair:
// {.stride = {2, 1}} is PyTorch's stride=(2, 1). Floor mode (ceil_mode=False).
struct MaxPool2dOptions {
  OptionalExpandingArray<2> stride;  // >= 1; the kernel size when left out, as PyTorch's
  ExpandingArray<2> padding = 0;     // between 0 and half the kernel size; counts as -inf
  ExpandingArray<2> dilation = 1;    // only 1 is supported yet (NotImplemented otherwise)
};

// Throws ember::Error ("max_pool2d: stride must be positive, got 0"), or NotImplemented for a
// dilation other than 1, when kernel_size or an option is out of range. nn::MaxPool2d calls it at
// construction and functional::max_pool2d at every call, so both give the same message.
void check_max_pool2d_options(const ExpandingArray<2>& kernel_size, const MaxPool2dOptions& options);

}  // namespace ember::nn
