// Activation layers.
// defines: ember::nn::{ReLU, Sigmoid, Tanh, GELU, GELUOptions, SiLU, LeakyReLU, ELU, Hardswish}
#pragma once

#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

// torch.nn.ReLU: max(x, 0) element-wise.
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::relu(input); }
};

// torch.nn.Sigmoid: 1 / (1 + exp(-x)) element-wise.
class Sigmoid : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::sigmoid(input); }
};

// torch.nn.Tanh: tanh(x) element-wise.
class Tanh : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::tanh(input); }
};

// torch.nn.GELU's options: approximate = "none" (erf) or "tanh".
using GELUOptions = functional::GELUOptions;

// torch.nn.GELU: x/2 (1 + erf(x/sqrt 2)), or its tanh approximation. Throws ember::Error for an
// `approximate` other than "none" and "tanh".
class GELU : public Module {
 public:
  explicit GELU(GELUOptions options = {});
  Tensor forward(const Tensor& input) override { return functional::gelu(input, options_); }
  std::string extra_repr() const override;  // approximate='none', as PyTorch

 private:
  GELUOptions options_;
};

// torch.nn.SiLU: x * sigmoid(x) element-wise.
class SiLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::silu(input); }
};

// torch.nn.LeakyReLU: x > 0 ? x : negative_slope * x.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) override { return functional::leaky_relu(input, negative_slope_); }
  std::string extra_repr() const override;  // negative_slope=0.01, as PyTorch

 private:
  double negative_slope_;
};

// torch.nn.ELU: x > 0 ? x : alpha * (exp(x) - 1).
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& input) override { return functional::elu(input, alpha_); }
  std::string extra_repr() const override;  // alpha=1.0, as PyTorch

 private:
  double alpha_;
};

// torch.nn.Hardswish: x * relu6(x + 3) / 6.
class Hardswish : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::hardswish(input); }
};

}  // namespace ember::nn
