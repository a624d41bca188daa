#include "ember/nn/normalization.h"

#include <charconv>
#include <cstdlib>
#include <utility>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

// A double as Python's repr prints it (1e-05, 0.1, 0.001, 1.0): the shortest digits that read
// back the same, fixed notation for exponents in [-4, 16), else scientific with a 2-digit exponent.
std::string python_float(double v) {
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string text(buf, sci.ptr);
  const size_t e = text.find('e');
  const int exponent = e == std::string::npos ? 0 : std::atoi(text.c_str() + e + 1);
  if (exponent >= -4 && exponent < 16) {
    auto fixed = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    std::string out(buf, fixed.ptr);
    return out.find('.') == std::string::npos ? out + ".0" : out;
  }
  return text;  // to_chars writes at least two exponent digits, as Python does
}

const char* python_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

BatchNormBase::BatchNormBase(const char* layer, int64_t num_features, const BatchNormOptions& options)
    : num_features_(num_features), options_(options) {
  EMBER_CHECK(num_features >= 1, layer, ": num_features must be positive, got ", num_features);
  EMBER_CHECK(options.eps > 0, layer, ": eps must be positive, got ", options.eps);
  EMBER_CHECK(!options.momentum || (*options.momentum >= 0 && *options.momentum <= 1), layer,
              ": momentum must be in [0, 1] or nullopt (a cumulative average), got ", options.momentum.value_or(0));
  if (options.affine) {
    weight = register_parameter("weight", ones({num_features}));
    bias = register_parameter("bias", zeros({num_features}));
  }
  if (options.track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({num_features}));
    running_var = register_buffer("running_var", ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = kInt64}));
  }
}

Tensor BatchNormBase::forward(const Tensor& input) {
  EMBER_CHECK(input.defined(), name(), ": input is an undefined tensor");
  check_input_dim(input);
  // As PyTorch's _BatchNorm.forward: count the batch, pick the factor, and use the batch's
  // statistics in training or when there are no running ones.
  std::optional<double> factor = options_.momentum.value_or(0.0);
  if (is_training() && options_.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(ones_like(num_batches_tracked));
    if (!options_.momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !options_.track_running_stats;
  const bool pass_running = !is_training() || options_.track_running_stats;
  return functional::batch_norm(input, pass_running ? running_mean : Tensor(), pass_running ? running_var : Tensor(),
                                weight, bias, use_batch_stats, factor, options_.eps);
}

std::string BatchNormBase::extra_repr() const {
  return ember::detail::str(num_features_, ", eps=", python_float(options_.eps), ", momentum=",
                            options_.momentum ? python_float(*options_.momentum) : std::string("None"),
                            ", affine=", python_bool(options_.affine), ", track_running_stats=",
                            python_bool(options_.track_running_stats));
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "BatchNorm1d: expected 2-D or 3-D input (got ", input.dim(),
              "-D input ", input.sizes(), ")");
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  EMBER_CHECK(input.dim() == 4, "BatchNorm2d: expected 4-D input (got ", input.dim(), "-D input ", input.sizes(), ")");
}

LayerNorm::LayerNorm(Shape normalized_shape, const LayerNormOptions& options)
    : normalized_shape_(std::move(normalized_shape)), options_(options) {
  EMBER_CHECK(!normalized_shape_.empty(), "LayerNorm: normalized_shape must have at least one dim, got []");
  for (int64_t v : normalized_shape_) {
    EMBER_CHECK(v >= 1, "LayerNorm: normalized_shape sizes must be positive, got ", normalized_shape_);
  }
  EMBER_CHECK(options.eps >= 0, "LayerNorm: eps must be non-negative, got ", options.eps);
  if (options.elementwise_affine) {
    weight = register_parameter("weight", ones(normalized_shape_));
    bias = register_parameter("bias", zeros(normalized_shape_));
  }
}

Tensor LayerNorm::forward(const Tensor& input) {
  EMBER_CHECK(input.defined(), name(), ": input is an undefined tensor");
  return functional::layer_norm(input, normalized_shape_, weight, bias, options_.eps);
}

std::string LayerNorm::extra_repr() const {
  // PyTorch prints normalized_shape as a Python tuple: (10,) or (4, 10).
  std::string shape = "(";
  for (size_t i = 0; i < normalized_shape_.size(); ++i) {
    shape += (i > 0 ? ", " : "") + std::to_string(normalized_shape_[i]);
  }
  shape += normalized_shape_.size() == 1 ? ",)" : ")";
  return ember::detail::str(shape, ", eps=", python_float(options_.eps), ", elementwise_affine=",
                            python_bool(options_.elementwise_affine));
}

}  // namespace ember::nn
