#include "ember/nn/pooling.h"

#include "ember/common/error.h"
#include "ember/nn/functional.h"

namespace ember::nn {

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
                            ", ceil_mode=False");
}

}  // namespace ember::nn
