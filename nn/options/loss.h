// The options of the classification losses, for the layers nn::CrossEntropyLoss and nn::NLLLoss
// and the ops nn::functional::cross_entropy and nll_loss; the reduction every loss takes.
// defines: ember::nn::Reduction, NllLossOptions, CrossEntropyOptions, BceOptions, BceWithLogitsOptions
#pragma once

#include <cstdint>

#include "ember/core/tensor.h"

namespace ember::nn {

// How the per-element losses become the result: kept ([N, d1, ...]), summed, or averaged (for
// nll_loss and cross_entropy: divided by the summed class weights of the non-ignored targets).
// BatchMean (PyTorch's "batchmean", kl_div only; the others throw for it): the sum divided by
// the batch size, input.size(0), which makes kl_div the KL divergence per sample.
enum class Reduction { None, Mean, Sum, BatchMean };

// PyTorch's F.nll_loss(input, target, weight, ignore_index=-100, reduction="mean"):
// {.weight = w, .ignore_index = 0, .reduction = Reduction::Sum}.
struct NllLossOptions {
  Tensor weight;               // [C], the input's dtype and device; undefined: every class weighs 1
  int64_t ignore_index = -100;  // targets equal to it add nothing (nor to the mean's divisor)
  Reduction reduction = Reduction::Mean;
};

// PyTorch's F.cross_entropy(input, target, weight, ignore_index=-100, reduction="mean",
// label_smoothing=0.0): {.weight = w, .ignore_index = 3, .label_smoothing = 0.1}.
struct CrossEntropyOptions {
  Tensor weight;                 // [C], as NllLossOptions::weight
  int64_t ignore_index = -100;   // as NllLossOptions::ignore_index
  double label_smoothing = 0.0;  // in [0, 1]: the target mixed with the uniform distribution
  Reduction reduction = Reduction::Mean;
};

// PyTorch's F.binary_cross_entropy(input, target, weight, reduction="mean").
struct BceOptions {
  Tensor weight;  // broadcast against the input (the input's dtype and device); undefined: 1
  Reduction reduction = Reduction::Mean;
};

// PyTorch's F.binary_cross_entropy_with_logits(input, target, weight, reduction="mean",
// pos_weight): {.pos_weight = p} weighs the positive term of each class ([C] over the last dim).
struct BceWithLogitsOptions {
  Tensor weight;      // broadcast against the input; undefined: 1
  Tensor pos_weight;  // broadcast against the input; undefined: 1
  Reduction reduction = Reduction::Mean;
};

}  // namespace ember::nn
