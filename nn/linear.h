// Linear layers and the reshaping that comes before them, as libtorch's torch/nn/modules/linear.h.
// defines: ember::nn::LinearOptions, Linear, Flatten
#pragma once

#include <cstdint>
#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct LinearOptions {
  bool bias = true;  // whether the layer has a bias parameter
};

// torch.nn.Linear: weight [out, in] and bias [out] (unless options.bias is false), initialised
// as PyTorch's: Linear(784, 10, {.bias = false}) is PyTorch's Linear(784, 10, bias=False).
// Throws ember::Error for non-positive feature counts.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, LinearOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;

 private:
  int64_t in_features_, out_features_;
};

// torch.nn.Flatten: dims [start_dim, end_dim] into one.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& input) override { return functional::flatten(input, start_dim_, end_dim_); }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;
};

}  // namespace ember::nn
