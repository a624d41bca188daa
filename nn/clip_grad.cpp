#include "ember/nn/clip_grad.h"

#include <cmath>
#include <map>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"

namespace ember::nn::utils {

namespace {

// The norm_type-norm of one gradient, on its device (a 0-d tensor).
Tensor norm_of(const Tensor& g, double p) {
  if (std::isinf(p)) return max(abs(g));
  if (p == 2) return sqrt(sum(mul(g, g)));
  if (p == 1) return sum(abs(g));
  return pow(sum(pow(abs(g), p)), 1.0 / p);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(norm_type > 0, "clip_grad_norm_: norm_type must be > 0 (or infinity), got ", norm_type);
  EMBER_CHECK(max_norm >= 0, "clip_grad_norm_: max_norm must be >= 0, got ", max_norm);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;
  // Each device stacks its gradients' norms and reduces them there; one number per device comes back.
  std::map<std::string, std::vector<Tensor>> norms_by_device;
  for (const Tensor& g : grads) norms_by_device[g.device().str()].push_back(norm_of(g, norm_type).to(kFloat64));
  std::vector<double> device_norms;
  for (auto& [device, norms] : norms_by_device) {
    device_norms.push_back(norm_of(stack(norms), norm_type).to(Device::cpu()).item<double>());
  }
  double total = 0;
  if (std::isinf(norm_type)) {
    for (double n : device_norms) total = (std::isnan(n) || n > total) ? n : total;
  } else {
    for (double n : device_norms) total += std::pow(n, norm_type);
    total = std::pow(total, 1.0 / norm_type);
  }
  if (error_if_nonfinite && !std::isfinite(total)) {
    throw Error(detail::str("clip_grad_norm_: the total norm of order ", norm_type, " of the gradients is ", total,
                            ", so they cannot be clipped; pass error_if_nonfinite = false to scale them anyway"));
  }
  const double coefficient = max_norm / (total + 1e-6);
  if (!(coefficient >= 1.0)) {  // NaN scales too, as PyTorch's clamp(max=1) leaves NaN
    for (Tensor& g : grads) g.mul_(coefficient);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  EMBER_CHECK(clip_value >= 0, "clip_grad_value_: clip_value must be >= 0, got ", clip_value);
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    g.copy_(clamp(g, -clip_value, clip_value));
  }
}

}  // namespace ember::nn::utils
