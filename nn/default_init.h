// The default initialisation of a layer's weight and bias (internal to nn/: conv.cpp, linear.cpp).
// defines: ember::nn::detail::reset_parameters
#pragma once

#include <cmath>

#include "ember/core/tensor.h"
#include "ember/nn/init.h"

namespace ember::nn::detail {

// PyTorch's default for Conv2d and Linear: kaiming_uniform_(weight, a=√5), bias U(±1/√fan_in).
// `bias` may be undefined.
inline void reset_parameters(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight);
  if (bias.defined()) {
    double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace ember::nn::detail
