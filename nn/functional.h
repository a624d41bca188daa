// The network ops: checked once here, dispatched to kernels::cpu (or ::cuda), differentiable.
// defines: ember::nn::functional::{conv2d, max_pool2d, relu, linear, flatten, dropout,
//          log_softmax, nll_loss, cross_entropy, mse_loss}, Reduction
//
// Every op validates its inputs before dispatching, so the same bad input gives the same
// ember::Error on every device, naming the op and the shapes it got.
#pragma once

#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/nn/options/conv.h"     // defines: Conv2dOptions
#include "ember/nn/options/pooling.h"  // defines: MaxPool2dOptions

namespace ember::nn::functional {

using nn::Conv2dOptions;
using nn::ExpandingArray;
using nn::MaxPool2dOptions;

// x [N, C, H, W], weight [K, C / groups, kH, kW], bias [K] or undefined -> [N, K, P, Q], as
// PyTorch's F.conv2d(input, weight, bias, stride, padding, dilation, groups); groups == C is the
// depthwise conv (its own direct kernels). options.bias is not read.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});

// x [N, C, H, W] -> [N, C, P, Q], as PyTorch's F.max_pool2d(input, kernel_size, stride, padding);
// kernel_size is one number or an {h, w} pair. The argmax of each window is kept for backward.
Tensor max_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const MaxPool2dOptions& options = {});

Tensor relu(const Tensor& input);

// input [*, in], weight [out, in], bias [out] or undefined -> [*, out] = input·weightᵀ + bias.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

Tensor flatten(const Tensor& input, int64_t start_dim = 1, int64_t end_dim = -1);

// Zeroes each element with probability p and scales the rest by 1/(1-p) when `training`;
// the identity otherwise. Draws from the default generator (seeded by ember::manual_seed).
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);

// Over dim 1 of a 2-D input [N, classes].
Tensor log_softmax(const Tensor& input, int64_t dim = 1);

enum class Reduction { None, Mean, Sum };

// log_probs [N, classes], target int64 [N] with labels in [0, classes).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction = Reduction::Mean);
// logits [N, classes], target int64 [N]: log_softmax + nll_loss, fused.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

}  // namespace ember::nn::functional
