#include "ember/nn/pooling.h"

#include "ember/common/error.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

void check_output_size(const char* op, const ExpandingArray<2>& output_size) {
  EMBER_CHECK(output_size[0] > 0 && output_size[1] > 0, op, ": output_size must be positive, got ",
              compact_str(output_size));
}

const char* python_bool(bool b) { return b ? "True" : "False"; }

}  // namespace

MaxPool2d::MaxPool2d(ExpandingArray<2> kernel_size, MaxPool2dOptions options)
    : kernel_size_(kernel_size), options_(options) {
  check_max_pool2d_options(kernel_size, options);
}

Tensor MaxPool2d::forward(const Tensor& input) { return functional::max_pool2d(input, kernel_size_, options_); }

// As PyTorch's, which prints each argument as given: 2 for an int, (3, 1) for a pair.
std::string MaxPool2d::extra_repr() const {
  return ember::detail::str("kernel_size=", compact_str(kernel_size_), ", stride=",
                            compact_str(options_.stride.value_or(kernel_size_)), ", padding=",
                            compact_str(options_.padding), ", dilation=", compact_str(options_.dilation),
                            ", ceil_mode=", python_bool(options_.ceil_mode));
}

AvgPool2d::AvgPool2d(ExpandingArray<2> kernel_size, AvgPool2dOptions options)
    : kernel_size_(kernel_size), options_(options) {
  check_avg_pool2d_options(kernel_size, options);
}

Tensor AvgPool2d::forward(const Tensor& input) { return functional::avg_pool2d(input, kernel_size_, options_); }

// PyTorch's AvgPool2d prints kernel_size, stride and padding only.
std::string AvgPool2d::extra_repr() const {
  return ember::detail::str("kernel_size=", compact_str(kernel_size_), ", stride=",
                            compact_str(options_.stride.value_or(kernel_size_)), ", padding=",
                            compact_str(options_.padding));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(ExpandingArray<2> output_size) : output_size_(output_size) {
  check_output_size("adaptive_avg_pool2d", output_size);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) { return functional::adaptive_avg_pool2d(input, output_size_); }

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + compact_str(output_size_); }

AdaptiveMaxPool2d::AdaptiveMaxPool2d(ExpandingArray<2> output_size) : output_size_(output_size) {
  check_output_size("adaptive_max_pool2d", output_size);
}

Tensor AdaptiveMaxPool2d::forward(const Tensor& input) { return functional::adaptive_max_pool2d(input, output_size_); }

std::string AdaptiveMaxPool2d::extra_repr() const { return "output_size=" + compact_str(output_size_); }

}  // namespace ember::nn
