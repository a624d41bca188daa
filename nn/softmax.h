// Softmax layers.
// defines: ember::nn::Softmax, LogSoftmax
#pragma once

#include <cstdint>
#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

// torch.nn.Softmax(dim): exp(x - max) / sum exp(x - max) over `dim` of an input of any rank.
class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& input) override { return functional::softmax(input, dim_); }
  std::string extra_repr() const override;

 private:
  int64_t dim_;
};

// torch.nn.LogSoftmax(dim): log(softmax(x)) over `dim`, computed without forming the softmax.
class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : dim_(dim) {}
  Tensor forward(const Tensor& input) override { return functional::log_softmax(input, dim_); }
  std::string extra_repr() const override;

 private:
  int64_t dim_;
};

}  // namespace ember::nn
