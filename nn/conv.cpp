#include "ember/nn/conv.h"

#include "ember/common/error.h"
#include "ember/nn/default_init.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

// What Conv2d and ConvTranspose2d check at construction, with the messages their functional op
// gives for the same mistake (`op`).
void check_layer_sizes(const char* layer, const char* op, int64_t in_channels, int64_t out_channels,
                       const ExpandingArray<2>& kernel_size, int64_t groups) {
  EMBER_CHECK(in_channels > 0 && out_channels > 0 && kernel_size[0] > 0 && kernel_size[1] > 0, layer,
              ": channels and kernel_size must be positive, got in_channels=", in_channels,
              " out_channels=", out_channels, " kernel_size=", compact_str(kernel_size));
  EMBER_CHECK(groups <= 0 || in_channels % groups == 0, op, ": in_channels (", in_channels,
              ") must be divisible by groups (", groups, ")");
  EMBER_CHECK(groups <= 0 || out_channels % groups == 0, op, ": out_channels (", out_channels,
              ") must be divisible by groups (", groups, ")");
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size, Conv2dOptions options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size), options_(options) {
  check_layer_sizes("Conv2d", "conv2d", in_channels, out_channels, kernel_size, options.groups);
  check_conv2d_options(options);
  // PyTorch's layout and init: fan_in = in_channels / groups * kH * kW (read from the weight).
  weight = register_parameter("weight", empty({out_channels, in_channels / options.groups, kernel_size[0],
                                               kernel_size[1]}));
  if (options.bias) bias = register_parameter("bias", empty({out_channels}));
  detail::reset_parameters(weight, bias);
}

Tensor Conv2d::forward(const Tensor& input) { return functional::conv2d(input, weight, bias, options_); }

// As PyTorch's: padding, dilation, groups and bias only when they differ from the defaults.
std::string Conv2d::extra_repr() const {
  std::string out = ember::detail::str(in_channels_, ", ", out_channels_, ", kernel_size=", kernel_size_,
                                       ", stride=", options_.stride);
  if (!options_.padding.all(0)) out += ember::detail::str(", padding=", options_.padding);
  if (!options_.dilation.all(1)) out += ember::detail::str(", dilation=", options_.dilation);
  if (options_.groups != 1) out += ember::detail::str(", groups=", options_.groups);
  if (!options_.bias) out += ", bias=False";
  return out;
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size,
                                 ConvTranspose2dOptions options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size), options_(options) {
  check_layer_sizes("ConvTranspose2d", "conv_transpose2d", in_channels, out_channels, kernel_size, options.groups);
  check_conv_transpose2d_options(options);
  weight = register_parameter("weight", empty({in_channels, out_channels / options.groups, kernel_size[0],
                                               kernel_size[1]}));
  if (options.bias) bias = register_parameter("bias", empty({out_channels}));
  detail::reset_parameters(weight, bias);
}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  return functional::conv_transpose2d(input, weight, bias, options_);
}

// As PyTorch's: the options that differ from the defaults, output_padding after padding.
std::string ConvTranspose2d::extra_repr() const {
  std::string out = ember::detail::str(in_channels_, ", ", out_channels_, ", kernel_size=", kernel_size_,
                                       ", stride=", options_.stride);
  if (!options_.padding.all(0)) out += ember::detail::str(", padding=", options_.padding);
  if (!options_.dilation.all(1)) out += ember::detail::str(", dilation=", options_.dilation);
  if (!options_.output_padding.all(0)) out += ember::detail::str(", output_padding=", options_.output_padding);
  if (options_.groups != 1) out += ember::detail::str(", groups=", options_.groups);
  if (!options_.bias) out += ", bias=False";
  return out;
}

}  // namespace ember::nn
