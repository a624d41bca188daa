// The options of 2-D convolutions, for the layers nn::Conv2d and nn::ConvTranspose2d and the ops
// nn::functional::conv2d and conv_transpose2d.
// defines: ember::nn::Conv2dOptions, check_conv2d_options, ConvTranspose2dOptions,
//          check_conv_transpose2d_options
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

// PyTorch's ConvTranspose2d keyword arguments, with its defaults. output_padding adds rows and
// columns at the bottom and right of the output (so that a stride-2 transposed conv can undo a
// stride-2 conv of an even size); each of it must be smaller than the stride or the dilation.
struct ConvTranspose2dOptions {
  ExpandingArray<2> stride = 1;          // >= 1
  ExpandingArray<2> padding = 0;         // >= 0: dilation * (kernel - 1) - padding zeros around the input
  ExpandingArray<2> output_padding = 0;  // >= 0, < max(stride, dilation)
  int64_t groups = 1;                    // >= 1, divides in and out channels; weight [in, out / groups, kH, kW]
  ExpandingArray<2> dilation = 1;        // >= 1
  bool bias = true;                      // nn::ConvTranspose2d only, as Conv2dOptions::bias
};

// Throws ember::Error naming conv_transpose2d when an option is out of range; nn::ConvTranspose2d
// calls it at construction and functional::conv_transpose2d at every call.
void check_conv_transpose2d_options(const ConvTranspose2dOptions& options);

}  // namespace ember::nn
