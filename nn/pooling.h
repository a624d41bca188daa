// Pooling layers.
// defines: ember::nn::MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d
#pragma once

#include <string>

#include "ember/nn/expanding_array.h"
#include "ember/nn/module.h"
#include "ember/nn/options/pooling.h"

namespace ember::nn {

// torch.nn.MaxPool2d: MaxPool2d(3, {.stride = 2, .padding = 1}) is PyTorch's
// MaxPool2d(3, stride=2, padding=1); kernel_size and each option are one number or an {h, w}
// pair, and the stride defaults to the kernel size. Throws ember::Error at construction for the
// options functional::max_pool2d rejects, with its message (check_max_pool2d_options).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(ExpandingArray<2> kernel_size, MaxPool2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  ExpandingArray<2> kernel_size_;
  MaxPool2dOptions options_;
};

// torch.nn.AvgPool2d: AvgPool2d(3, {.stride = 2, .padding = 1, .count_include_pad = false}).
// Throws at construction for the options functional::avg_pool2d rejects, with its message.
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(ExpandingArray<2> kernel_size, AvgPool2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  ExpandingArray<2> kernel_size_;
  AvgPool2dOptions options_;
};

// torch.nn.AdaptiveAvgPool2d: AdaptiveAvgPool2d(1) is global average pooling.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(ExpandingArray<2> output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  ExpandingArray<2> output_size_;
};

// torch.nn.AdaptiveMaxPool2d (return_indices=False: forward returns the pooled values).
class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(ExpandingArray<2> output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  ExpandingArray<2> output_size_;
};

}  // namespace ember::nn
