// The network ops: checked once here, dispatched to kernels::cpu (or ::cuda), differentiable.
// defines: ember::nn::functional::{conv2d, max_pool2d, relu, linear, flatten, dropout,
//          log_softmax, nll_loss, cross_entropy, mse_loss}, Reduction
//
// Every op validates its inputs before dispatching, so the same bad input gives the same
// ember::Error on every device, naming the op and the shapes it got.
#pragma once

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::nn::functional {

struct Conv2dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;  // only 1 is supported yet
};

// x [N, C, H, W], weight [K, C, R, S], bias [K] or undefined -> [N, K, P, Q].
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Conv2dOptions options = {});

struct MaxPool2dOptions {
  int64_t kernel_size = 2;
  int64_t stride = 0;  // 0 means kernel_size, as PyTorch's default
  int64_t padding = 0;
};
// x [N, C, H, W] -> [N, C, P, Q]; the argmax of each window is kept for backward.
Tensor max_pool2d(const Tensor& input, MaxPool2dOptions options = {});
Tensor max_pool2d(const Tensor& input, int64_t kernel_size);

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
