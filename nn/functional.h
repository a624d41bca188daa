// The network ops: checked once here, dispatched to kernels::cpu (or ::cuda), differentiable.
// defines: ember::nn::functional::{conv2d, conv_transpose2d, max_pool2d, avg_pool2d, adaptive_avg_pool2d,
//          adaptive_max_pool2d, relu, sigmoid, tanh, gelu, GELUOptions, silu, leaky_relu, elu,
//          hardswish, linear, flatten, dropout, dropout2d, softmax, log_softmax, nll_loss, cross_entropy,
//          mse_loss, l1_loss, smooth_l1_loss, huber_loss, binary_cross_entropy,
//          binary_cross_entropy_with_logits, kl_div, batch_norm, layer_norm, embedding}, Reduction
//
// Every op validates its inputs before dispatching, so the same bad input gives the same
// ember::Error on every device, naming the op and the shapes it got.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/core/tensor.h"
#include "ember/nn/options/conv.h"     // defines: Conv2dOptions, ConvTranspose2dOptions
#include "ember/nn/options/loss.h"     // defines: Reduction, NllLossOptions, CrossEntropyOptions
#include "ember/nn/options/pooling.h"  // defines: MaxPool2dOptions, AvgPool2dOptions

namespace ember::nn::functional {

using nn::AvgPool2dOptions;
using nn::BceOptions;
using nn::BceWithLogitsOptions;
using nn::Conv2dOptions;
using nn::CrossEntropyOptions;
using nn::ExpandingArray;
using nn::MaxPool2dOptions;
using nn::NllLossOptions;
using nn::Reduction;

// x [N, C, H, W], weight [K, C / groups, kH, kW], bias [K] or undefined -> [N, K, P, Q], as
// PyTorch's F.conv2d(input, weight, bias, stride, padding, dilation, groups); groups == C is the
// depthwise conv (its own direct kernels). options.bias is not read.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});

// x [N, C_in, H, W], weight [C_in, C_out / groups, kH, kW], bias [C_out] or undefined ->
// [N, C_out, (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1, ...]: the
// gradient of conv2d with respect to its input, as PyTorch's F.conv_transpose2d(input, weight,
// bias, stride, padding, output_padding, groups, dilation). It runs conv2d's kernels mirrored
// (cuDNN's too, on the vendor backend). options.bias is not read.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const ConvTranspose2dOptions& options = {});

// x [N, C, H, W] (or [C, H, W]) -> [N, C, P, Q], as PyTorch's F.max_pool2d(input, kernel_size,
// stride, padding, dilation, ceil_mode); kernel_size is one number or an {h, w} pair. The argmax
// of each window is kept for backward.
Tensor max_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const MaxPool2dOptions& options = {});

// x [N, C, H, W] (or [C, H, W]) -> [N, C, P, Q], as PyTorch's F.avg_pool2d.
Tensor avg_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const AvgPool2dOptions& options = {});

// x [N, C, H, W] (or [C, H, W]) -> [N, C, oh, ow], as PyTorch's F.adaptive_avg_pool2d (1: global).
Tensor adaptive_avg_pool2d(const Tensor& input, ExpandingArray<2> output_size);

// x [N, C, H, W] (or [C, H, W]) -> [N, C, oh, ow], as PyTorch's F.adaptive_max_pool2d (the output
// only; each window's argmax is kept for backward).
Tensor adaptive_max_pool2d(const Tensor& input, ExpandingArray<2> output_size);

Tensor relu(const Tensor& input);

// torch.nn.functional.gelu's approximate: "none" (the exact erf form) or "tanh".
struct GELUOptions {
  std::string approximate = "none";
};

// 1 / (1 + exp(-x)) element-wise, as torch.sigmoid; backward from the output.
Tensor sigmoid(const Tensor& input);
// tanh(x) element-wise, as torch.tanh; backward from the output.
Tensor tanh(const Tensor& input);
// x/2 (1 + erf(x/sqrt 2)), or with approximate="tanh" x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))), as F.gelu.
Tensor gelu(const Tensor& input, const GELUOptions& options = {});
// x * sigmoid(x) element-wise, as F.silu.
Tensor silu(const Tensor& input);
// x > 0 ? x : negative_slope * x, as F.leaky_relu.
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
// x > 0 ? x : alpha * (exp(x) - 1), as F.elu.
Tensor elu(const Tensor& input, double alpha = 1.0);
// x * relu6(x + 3) / 6, as F.hardswish.
Tensor hardswish(const Tensor& input);

// input [*, in], weight [out, in], bias [out] or undefined -> [*, out] = input·weightᵀ + bias.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor());

Tensor flatten(const Tensor& input, int64_t start_dim = 1, int64_t end_dim = -1);

// Zeroes each element with probability p and scales the rest by 1/(1-p) when `training`;
// the identity otherwise. Draws from the default generator (seeded by ember::manual_seed).
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true);
// Zeroes whole channels: each [H, W] plane of input [N, C, H, W] (or [C, H, W], unbatched) with
// probability p, scaling the kept ones by 1/(1-p), when `training` (as F.dropout2d).
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true);

// log(softmax(input)) over `dim` (negative counts from the end) of an input of any rank, as
// PyTorch's F.log_softmax(input, dim).
Tensor log_softmax(const Tensor& input, int64_t dim = 1);
// exp(x - max) / sum exp(x - max) over `dim` of an input of any rank, as PyTorch's F.softmax.
Tensor softmax(const Tensor& input, int64_t dim);

// log_probs [N, C] or [N, C, d1, ...], target int64 [N] or [N, d1, ...] with labels in [0, C) or
// equal to options.ignore_index: -weight[t] * log_probs[t], reduced, as PyTorch's F.nll_loss.
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllLossOptions& options = {});
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction);
// logits as nll_loss's log_probs: log_softmax over dim 1 + nll_loss with label smoothing, fused,
// as PyTorch's F.cross_entropy with class-index targets.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options = {});
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// The element-wise losses (input and target of one shape and dtype), composed from core's ops:
// |x - t|, as PyTorch's F.l1_loss.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = x - t), as F.smooth_l1_loss; beta >= 0.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta), as F.huber_loss; delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// -w (t log p + (1 - t) log(1 - p)) on probabilities p, each log clamped at -100, as F.binary_cross_entropy.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BceOptions& options = {});
// binary_cross_entropy(sigmoid(x), t) computed stably from the logits x, with pos_weight, as
// F.binary_cross_entropy_with_logits.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BceWithLogitsOptions& options = {});
// t (log t - x) (0 where t == 0), or with log_target exp(t) (t - x), on log-probabilities x, as
// F.kl_div; Reduction::Mean averages over every element (PyTorch's "mean"), Reduction::BatchMean
// divides the sum by input.size(0) ("batchmean", the KL divergence per sample).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, bool log_target = false);
// input [N, C], [N, C, L] or [N, C, H, W] (any [N, C, *]) normalised per channel, as PyTorch's
// F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps). Each of
// running_mean, running_var ([C], both or neither), weight and bias ([C]) may be undefined.
// training: batch statistics (biased variance), and running_mean/var, when defined, updated in
// place (running = (1 - momentum) * running + momentum * batch stat, unbiased variance);
// momentum = nullopt (PyTorch's None, a cumulative average) needs the count of batches that only
// nn::BatchNorm* keeps, so here it throws when there are running statistics to update. Not
// training: the running statistics, which must then be defined. Differentiable in input,
// weight and bias.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  std::optional<double> momentum = 0.1, double eps = 1e-5);
// input [*, normalized_shape] normalised over its last normalized_shape.size() dims, each slice
// by its own mean and biased variance, then * weight + bias (each of shape normalized_shape, or
// undefined), as PyTorch's F.layer_norm(input, normalized_shape, weight, bias, eps).
// Differentiable in input, weight and bias.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// int64 indices of any shape [*], each in [0, num_embeddings), -> [*, embedding_dim]: the rows of
// weight [num_embeddings, embedding_dim], as F.embedding(input, weight, padding_idx). The row
// padding_idx (negative counts from the end) gets no gradient. Differentiable in weight.
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

}  // namespace ember::nn::functional
