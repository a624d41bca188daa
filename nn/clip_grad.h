// Gradient clipping, as torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
// defines: ember::nn::utils::clip_grad_norm_, clip_grad_value_
#pragma once

#include <limits>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn::utils {

// Scales every gradient in place by max_norm / (total + 1e-6) when that is below 1, where total
// is the norm_type-norm of all gradients together (PyTorch's norm of the per-tensor norms;
// norm_type may be any p > 0 or infinity). Returns the total norm, before clipping. Parameters
// without a gradient are skipped. The norms are reduced on each gradient's device and cross to
// the host once per device. With error_if_nonfinite a NaN or infinite total throws ember::Error
// and leaves the gradients alone (otherwise they are scaled by NaN, as PyTorch does).
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient in place to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace ember::nn::utils
