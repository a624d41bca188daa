#include "ember/nn/layers.h"

#include <cmath>

#include "ember/common/error.h"
#include "ember/nn/init.h"

namespace ember::nn {

namespace {
// PyTorch's default: kaiming_uniform_(weight, a=√5), bias U(±1/√fan_in).
void reset_parameters(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight);
  if (bias.defined()) {
    double bound = 1.0 / std::sqrt(static_cast<double>(init::fan_in(weight)));
    init::uniform_(bias, -bound, bound);
  }
}
}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options)
    : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size), options_(options) {
  EMBER_CHECK(in_channels > 0 && out_channels > 0 && kernel_size > 0, "Conv2d: channels and kernel_size must "
              "be positive, got in_channels=", in_channels, " out_channels=", out_channels, " kernel_size=", kernel_size);
  weight = register_parameter("weight", empty({out_channels, in_channels, kernel_size, kernel_size}));
  if (options.bias) bias = register_parameter("bias", empty({out_channels}));
  reset_parameters(weight, bias);
}

Tensor Conv2d::forward(const Tensor& input) {
  return functional::conv2d(input, weight, bias,
                            {.stride = options_.stride, .padding = options_.padding, .dilation = options_.dilation});
}

std::string Conv2d::extra_repr() const {
  auto pair = [](int64_t v) { return detail::str("(", v, ", ", v, ")"); };
  std::string out = detail::str(in_channels_, ", ", out_channels_, ", kernel_size=", pair(kernel_size_),
                                ", stride=", pair(options_.stride));
  if (options_.padding) out += ", padding=" + pair(options_.padding);
  if (options_.dilation != 1) out += ", dilation=" + pair(options_.dilation);
  if (!options_.bias) out += ", bias=False";
  return out;
}

MaxPool2d::MaxPool2d(int64_t kernel_size, int64_t stride, int64_t padding)
    : options_{.kernel_size = kernel_size, .stride = stride == 0 ? kernel_size : stride, .padding = padding} {}

Tensor MaxPool2d::forward(const Tensor& input) { return functional::max_pool2d(input, options_); }

std::string MaxPool2d::extra_repr() const {
  return detail::str("kernel_size=", options_.kernel_size, ", stride=", options_.stride, ", padding=",
                     options_.padding, ", dilation=1, ceil_mode=False");
}

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias)
    : in_features_(in_features), out_features_(out_features) {
  EMBER_CHECK(in_features > 0 && out_features > 0, "Linear: features must be positive, got in_features=",
              in_features, " out_features=", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  if (has_bias) bias = register_parameter("bias", empty({out_features}));
  reset_parameters(weight, bias);
}

Tensor Linear::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

std::string Linear::extra_repr() const {
  return detail::str("in_features=", in_features_, ", out_features=", out_features_, ", bias=",
                     bias.defined() ? "True" : "False");
}

std::string Flatten::extra_repr() const { return detail::str("start_dim=", start_dim_, ", end_dim=", end_dim_); }

Dropout::Dropout(double p) : p_(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got ", p);
}

std::string Dropout::extra_repr() const { return detail::str("p=", p_, ", inplace=False"); }

void Sequential::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

Module& Sequential::operator[](size_t index) const {
  EMBER_CHECK(index < layers_.size(), "Sequential: index ", index, " is out of range for ", layers_.size(), " layers");
  return *layers_[index];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& layer : layers_) x = (*layer)(x);
  return x;
}

}  // namespace ember::nn
