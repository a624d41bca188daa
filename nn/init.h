// Parameter initialisation as PyTorch's defaults, drawn from ember's seeded generator.
// defines: ember::nn::init::{uniform_, kaiming_uniform_, zeros_, ones_, fan_in}
#pragma once

#include <cmath>

#include "ember/core/tensor.h"

namespace ember::nn::init {

// Input connections of one output unit: dim 1 times the receptive field (dims 2..).
int64_t fan_in(const Tensor& weight);
// Fills `t` in place with U(low, high). Runs without recording a gradient.
void uniform_(Tensor& t, double low, double high);
// torch.nn.init.kaiming_uniform_(t, a) with leaky_relu gain: U(±sqrt(6 / ((1 + a²) fan_in))).
// Requires t.dim() >= 2 (as fan_in). With the default a = √5 the bound is 1/sqrt(fan_in).
void kaiming_uniform_(Tensor& t, double a = std::sqrt(5.0));
// Fill `t` in place with 0 / 1, without recording a gradient.
void zeros_(Tensor& t);
void ones_(Tensor& t);

}  // namespace ember::nn::init
