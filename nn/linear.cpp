#include "ember/nn/linear.h"

#include "ember/common/error.h"
#include "ember/nn/default_init.h"

namespace ember::nn {

Linear::Linear(int64_t in_features, int64_t out_features, LinearOptions options)
    : in_features_(in_features), out_features_(out_features) {
  EMBER_CHECK(in_features > 0 && out_features > 0, "Linear: features must be positive, got in_features=",
              in_features, " out_features=", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  if (options.bias) bias = register_parameter("bias", empty({out_features}));
  detail::reset_parameters(weight, bias);
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

std::string Linear::extra_repr() const {
  return ember::detail::str("in_features=", in_features_, ", out_features=", out_features_, ", bias=",
                            bias.defined() ? "True" : "False");
}

std::string Flatten::extra_repr() const { return ember::detail::str("start_dim=", start_dim_, ", end_dim=", end_dim_); }

}  // namespace ember::nn
