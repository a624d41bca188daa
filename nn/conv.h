// Convolution layers.
// defines: ember::nn::Conv2d, ConvTranspose2d
#pragma once

#include <cstdint>
#include <string>

#include "ember/nn/expanding_array.h"
#include "ember/nn/module.h"
#include "ember/nn/options/conv.h"

namespace ember::nn {

// torch.nn.Conv2d: weight [out, in, kH, kW] and bias [out] (unless options.bias is false),
// initialised as PyTorch's. kernel_size and each option are one number or an {h, w} pair:
// Conv2d(4, 4, {3, 1}, {.stride = {2, 1}, .padding = {1, 0}}) is PyTorch's
// Conv2d(4, 4, (3, 1), stride=(2, 1), padding=(1, 0)). Throws ember::Error at construction for
// non-positive channels or kernel sizes and for the options functional::conv2d rejects, with its
// message (check_conv2d_options).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size, Conv2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;

 private:
  int64_t in_channels_, out_channels_;
  ExpandingArray<2> kernel_size_;
  Conv2dOptions options_;
};

// torch.nn.ConvTranspose2d: weight [in, out / groups, kH, kW] and bias [out] (unless options.bias
// is false), initialised as PyTorch's (its fan_in reads the weight's dim 1, out / groups * kH *
// kW, as PyTorch's does). ConvTranspose2d(64, 32, 2, {.stride = 2}) doubles the height and width.
// Throws ember::Error at construction as Conv2d does, with conv_transpose2d's messages.
class ConvTranspose2d : public Module {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size,
                  ConvTranspose2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;

 private:
  int64_t in_channels_, out_channels_;
  ExpandingArray<2> kernel_size_;
  ConvTranspose2dOptions options_;
};

}  // namespace ember::nn
