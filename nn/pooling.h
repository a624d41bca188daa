// Pooling layers.
// defines: ember::nn::MaxPool2d
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

}  // namespace ember::nn
