// Loss layers: called with the input and the target, as PyTorch's.
// defines: ember::nn::CrossEntropyLoss, NLLLoss
#pragma once

#include <string>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"
#include "ember/nn/options/loss.h"

namespace ember::nn {

// torch.nn.CrossEntropyLoss(weight, ignore_index, reduction, label_smoothing) with class-index
// targets: functional::cross_entropy with these options. The class weights, when given, are the
// buffer "weight" (they follow the module to another device). Throws ember::Error at
// construction for label_smoothing outside [0, 1] or a weight that is not 1-D.
class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions options = {});
  using Module::forward;  // the one-argument forward throws: a loss takes the target too
  using Module::operator();
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string extra_repr() const override;

 private:
  CrossEntropyOptions options_;
};

// torch.nn.NLLLoss(weight, ignore_index, reduction): functional::nll_loss with these options, on
// log-probabilities; the weights are the buffer "weight" as in CrossEntropyLoss.
class NLLLoss : public Module {
 public:
  explicit NLLLoss(NllLossOptions options = {});
  using Module::forward;  // the one-argument forward throws: a loss takes the target too
  using Module::operator();
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string extra_repr() const override;

 private:
  NllLossOptions options_;
};

}  // namespace ember::nn
