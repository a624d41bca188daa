// Activation layers.
// defines: ember::nn::ReLU
#pragma once

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

// torch.nn.ReLU: max(x, 0) element-wise.
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::relu(input); }
};

}  // namespace ember::nn
