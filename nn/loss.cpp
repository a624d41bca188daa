#include "ember/nn/loss.h"

#include "ember/common/error.h"

namespace ember::nn {
namespace {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::BatchMean: return "batchmean";
  }
  return "?";
}

void check_weight(const char* layer, const Tensor& weight) {
  EMBER_CHECK(!weight.defined() || weight.dim() == 1, layer, ": weight must be 1-D [C] (one per class), got ",
              weight.sizes());
}

// The registered buffer, which follows the module across devices, rather than the options' copy.
Tensor weight_of(const Module& m) {
  for (auto& [name, t] : m.named_buffers()) {
    if (name == "weight") return t;
  }
  return Tensor();
}

}  // namespace

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyOptions options) : options_(std::move(options)) {
  EMBER_CHECK(options_.label_smoothing >= 0.0 && options_.label_smoothing <= 1.0,
              "CrossEntropyLoss: label_smoothing must be in [0, 1], got ", options_.label_smoothing);
  check_weight("CrossEntropyLoss", options_.weight);
  if (options_.weight.defined()) register_buffer("weight", options_.weight);
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  CrossEntropyOptions o = options_;
  o.weight = weight_of(*this);
  return functional::cross_entropy(input, target, o);
}

std::string CrossEntropyLoss::extra_repr() const {
  return ember::detail::str("ignore_index=", options_.ignore_index, ", reduction=", reduction_name(options_.reduction),
                            ", label_smoothing=", options_.label_smoothing);
}

NLLLoss::NLLLoss(NllLossOptions options) : options_(std::move(options)) {
  check_weight("NLLLoss", options_.weight);
  if (options_.weight.defined()) register_buffer("weight", options_.weight);
}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  NllLossOptions o = options_;
  o.weight = weight_of(*this);
  return functional::nll_loss(input, target, o);
}

std::string NLLLoss::extra_repr() const {
  return ember::detail::str("ignore_index=", options_.ignore_index, ", reduction=", reduction_name(options_.reduction));
}

}  // namespace ember::nn
