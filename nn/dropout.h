// Dropout layers.
// defines: ember::nn::Dropout, ember::nn::Dropout2d
#pragma once

#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

// torch.nn.Dropout: zeroes each element with probability p in train() mode only, scaling the
// rest by 1/(1-p). Throws ember::Error for p outside [0, 1].
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override { return functional::dropout(input, p_, is_training()); }
  std::string extra_repr() const override;

 private:
  double p_;
};

// torch.nn.Dropout2d: zeroes whole channels of [N, C, H, W] (or [C, H, W]) input with
// probability p in train() mode only, scaling the rest by 1/(1-p).
class Dropout2d : public Module {
 public:
  explicit Dropout2d(double p = 0.5);
  Tensor forward(const Tensor& input) override { return functional::dropout2d(input, p_, is_training()); }
  std::string extra_repr() const override;

 private:
  double p_;
};

}  // namespace ember::nn
