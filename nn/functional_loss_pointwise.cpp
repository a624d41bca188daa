// The element-wise losses, composed from core's differentiable ops (their backward is autograd's
// through those ops; no kernels of their own): l1_loss, smooth_l1_loss, huber_loss,
// binary_cross_entropy, binary_cross_entropy_with_logits, kl_div. PyTorch 1.13's formulas.
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {
namespace {

// input and target: defined, floating, the same shape, dtype and device.
void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  detail::check_defined(input, op, "input");
  detail::check_defined(target, op, "target");
  detail::check_floating(input, op, "input");
  EMBER_CHECK(input.sizes() == target.sizes(), op, ": input ", input.sizes(), " and target ", target.sizes(),
              " must have the same shape");
  detail::check_same(target, input, op, "target", "input");
}

// An optional weight broadcast against the input: its dtype and device.
void check_weight(const char* op, const char* what, const Tensor& weight, const Tensor& input) {
  if (weight.defined()) detail::check_same(weight, input, op, what, "input");
}

// BatchMean reaches here from kl_div only (the other losses reject it at their entry).
Tensor reduce(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return losses;
    case Reduction::Sum: return sum(losses);
    case Reduction::Mean: return mean(losses);
    case Reduction::BatchMean: return div(sum(losses), static_cast<double>(losses.dim() > 0 ? losses.size(0) : 1));
  }
  return losses;
}

Tensor zeros_as(const Tensor& t) { return zeros(t.sizes(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor full_as(const Tensor& t, double v) { return full(t.sizes(), v, {.dtype = t.dtype(), .device = t.device()}); }

}  // namespace

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair("l1_loss", input, target);
  detail::check_not_batchmean(reduction, "l1_loss");
  return reduce(abs(sub(input, target)), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  constexpr const char* op = "smooth_l1_loss";
  check_pair(op, input, target);
  detail::check_not_batchmean(reduction, op);
  EMBER_CHECK(beta >= 0.0, op, ": beta must be >= 0, got ", beta);
  if (beta == 0.0) return l1_loss(input, target, reduction);  // as PyTorch: the quadratic part is empty
  Tensor d = abs(sub(input, target));
  // |d| < beta: 0.5 d^2 / beta; otherwise |d| - 0.5 beta.
  Tensor losses = where(lt(d, beta), div(mul(mul(d, d), 0.5), beta), sub(d, 0.5 * beta));
  return reduce(losses, reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  constexpr const char* op = "huber_loss";
  check_pair(op, input, target);
  detail::check_not_batchmean(reduction, op);
  EMBER_CHECK(delta > 0.0, op, ": delta must be > 0, got ", delta);
  Tensor d = abs(sub(input, target));
  // |d| < delta: 0.5 d^2; otherwise delta (|d| - 0.5 delta).
  Tensor losses = where(lt(d, delta), mul(mul(d, d), 0.5), mul(sub(d, 0.5 * delta), delta));
  return reduce(losses, reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BceOptions& options) {
  constexpr const char* op = "binary_cross_entropy";
  check_pair(op, input, target);
  detail::check_not_batchmean(options.reduction, op);
  check_weight(op, "weight", options.weight, input);
  // PyTorch clamps each log at -100, so p = 0 or 1 gives a finite loss.
  Tensor floor = full_as(input, -100.0);
  Tensor log_p = maximum(log(input), floor);
  Tensor log_1mp = maximum(log(sub(full_as(input, 1.0), input)), floor);
  Tensor losses = neg(add(mul(target, log_p), mul(sub(full_as(target, 1.0), target), log_1mp)));
  if (options.weight.defined()) losses = mul(losses, options.weight);
  return reduce(losses, options.reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const BceWithLogitsOptions& options) {
  constexpr const char* op = "binary_cross_entropy_with_logits";
  check_pair(op, input, target);
  detail::check_not_batchmean(options.reduction, op);
  check_weight(op, "weight", options.weight, input);
  check_weight(op, "pos_weight", options.pos_weight, input);
  // (1 - y) x + lw (log(1 + exp(-|x|)) + max(-x, 0)), lw = (pos_weight - 1) y + 1: stable for any x.
  Tensor softplus_neg = add(log(add(exp(neg(abs(input))), 1.0)), maximum(neg(input), zeros_as(input)));
  Tensor log_weight = options.pos_weight.defined() ? add(mul(sub(options.pos_weight, 1.0), target), 1.0)
                                                   : Tensor();
  Tensor losses = add(mul(sub(full_as(target, 1.0), target), input),
                      log_weight.defined() ? mul(log_weight, softplus_neg) : softplus_neg);
  if (options.weight.defined()) losses = mul(losses, options.weight);
  return reduce(losses, options.reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  constexpr const char* op = "kl_div";
  check_pair(op, input, target);
  Tensor losses;
  if (log_target) {
    losses = mul(exp(target), sub(target, input));
  } else {
    // target (log target - input), 0 where target is 0 (xlogy's convention; log 0 is not taken).
    Tensor positive = gt(target, 0.0);
    Tensor safe = where(positive, target, full_as(target, 1.0));
    losses = where(positive, mul(target, sub(log(safe), input)), zeros_as(input));
  }
  return reduce(losses, reduction);
}

}  // namespace ember::nn::functional
