// ConvTranspose2d and F::conv_transpose2d: PyTorch's values (tests/gen_conv_transpose_fixtures.py),
// float64 finite differences (groups, stride, dilation, output_padding, batch 1, non-contiguous
// input), the module's parameters and printing, and the error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Shape;
using ember::Tensor;
using namespace ember::test;
using Catch::Matchers::Contains;

namespace {

void check_fixture(const std::string& name) {
  auto f = fixture("conv_transpose_" + name);
  const Tensor o = f.at("options");
  const auto at = [&](int64_t i) { return static_cast<int64_t>(o.at<double>({i})); };
  const bool has_bias = at(9) != 0;
  const Tensor& w0 = f.at("weight");
  ember::nn::ConvTranspose2d layer(w0.size(0), w0.size(1) * at(6), {w0.size(2), w0.size(3)},
                                   {.stride = {at(0), at(1)},
                                    .padding = {at(2), at(3)},
                                    .output_padding = {at(4), at(5)},
                                    .groups = at(6),
                                    .dilation = {at(7), at(8)},
                                    .bias = has_bias});
  layer.to(w0.dtype());
  {
    ember::NoGradGuard no_grad;
    layer.weight.copy_(w0);
    if (has_bias) layer.bias.copy_(f.at("bias"));
  }
  const double tol = w0.dtype() == ember::kFloat64 ? 1e-12 : 1e-5;
  Tensor x = leaf(f.at("x"));
  Tensor y = layer(x);
  require_close(y, f.at("y"), name + ": forward", tol);
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + ": input gradient", tol);
  require_close(layer.weight.grad(), f.at("dweight"), name + ": weight gradient", tol);
  if (has_bias) require_close(layer.bias.grad(), f.at("dbias"), name + ": bias gradient", tol);
}

}  // namespace

TEST_CASE("ConvTranspose2d matches PyTorch: upsampling, DCGAN's 4x4, groups, dilation with output_padding, float64") {
  for (const char* name : {"upsample_s2", "dcgan_k4", "groups", "dilated_output_padding", "f64"}) check_fixture(name);
}

TEST_CASE("conv_transpose2d gradients match finite differences over its options") {
  ember::manual_seed(47);
  struct Case {
    std::string what;
    Shape input, weight;
    ember::nn::ConvTranspose2dOptions options;
  };
  const std::vector<Case> cases{
      {"stride 2, padding 1, output_padding 1", {2, 3, 3, 4}, {3, 2, 3, 3}, {.stride = 2, .padding = 1, .output_padding = 1}},
      {"batch 1, 1x1 kernel", {1, 4, 3, 3}, {4, 3, 1, 1}, {}},
      {"groups 2, unequal stride", {2, 4, 3, 2}, {4, 1, 2, 3}, {.stride = {2, 1}, .groups = 2}},
      {"dilation 2, output_padding 1 >= stride 1", {1, 2, 4, 3}, {2, 2, 3, 2}, {.padding = {2, 1}, .output_padding = 1, .dilation = 2}},
  };
  for (const Case& c : cases) {
    const int64_t out_channels = c.weight[1] * c.options.groups;
    check_gradients(c.what, [&](const std::vector<Tensor>& in) {
      return F::conv_transpose2d(in[0], in[1], in[2], c.options);
    }, {ember::randn(c.input), ember::randn(c.weight), ember::randn({out_channels})});
  }
  check_gradients("non-contiguous input (a transposed view)", [](const std::vector<Tensor>& in) {
    return F::conv_transpose2d(in[0].transpose(2, 3), in[1], Tensor(), {.stride = 2});
  }, {ember::randn({2, 3, 4, 3}, {.dtype = ember::kFloat64}), ember::randn({3, 2, 2, 2})});
}

TEST_CASE("ConvTranspose2d undoes a stride-2 conv's shape, registers PyTorch's names and prints as PyTorch") {
  ember::nn::ConvTranspose2d up(64, 32, 2, {.stride = 2});
  CHECK(up(ember::randn({1, 64, 7, 7})).sizes() == Shape{1, 32, 14, 14});
  ember::nn::ConvTranspose2d layer(4, 8, 3, {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2,
                                            .dilation = 2, .bias = false});
  CHECK(layer.weight.sizes() == Shape{4, 4, 3, 3});
  CHECK(!layer.bias.defined());
  CHECK(layer.named_parameters().size() == 1);
  CHECK(layer.extra_repr() == "4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
                              "output_padding=(1, 1), groups=2, bias=False");
  CHECK(ember::nn::ConvTranspose2d(4, 8, 3).extra_repr() == "4, 8, kernel_size=(3, 3), stride=(1, 1)");
  // PyTorch's init: kaiming_uniform(a=sqrt 5) with fan_in = weight.size(1) * kH * kW = 8 * 9.
  ember::nn::ConvTranspose2d wide(16, 8, 3);
  const double bound = 1.0 / std::sqrt(72.0);
  CHECK(ember::max(ember::abs(wide.weight)).item<float>() <= bound);
  CHECK(ember::max(ember::abs(wide.bias)).item<float>() <= bound);
}

TEST_CASE("conv_transpose2d and ConvTranspose2d reject bad arguments with messages naming the op") {
  Tensor x = ember::randn({2, 4, 5, 5}), w = ember::randn({4, 3, 3, 3});
  CHECK_THROWS_WITH(F::conv_transpose2d(ember::randn({64, 784}), w),
                    Contains("conv_transpose2d: input must be 4-D [N, C, H, W], got [64, 784]"));
  CHECK_THROWS_WITH(F::conv_transpose2d(ember::randn({2, 3, 5, 5}), w),
                    Contains("conv_transpose2d: input has 3 channels but weight [4, 3, 3, 3] expects 4"));
  CHECK_THROWS_WITH(F::conv_transpose2d(x, w, Tensor(), {.stride = 2, .output_padding = 2}),
                    Contains("conv_transpose2d: output_padding must be non-negative and smaller than either stride or "
                             "dilation, got output_padding=2, stride=2, dilation=1"));
  CHECK_THROWS_WITH(F::conv_transpose2d(x, w, Tensor(), {.groups = 3}),
                    Contains("conv_transpose2d: in_channels (4) must be divisible by groups (3)"));
  CHECK_THROWS_WITH(F::conv_transpose2d(x, w, ember::randn({4})),
                    Contains("conv_transpose2d: bias must be [3] to match weight [4, 3, 3, 3] and groups 1, got [4]"));
  CHECK_THROWS_WITH(F::conv_transpose2d(ember::randn({1, 4, 1, 1}), w, Tensor(), {.padding = 2}),
                    Contains("conv_transpose2d: the output would be -1x-1"));
  CHECK_THROWS_WITH(F::conv_transpose2d(x, w.to(ember::kFloat64)),
                    Contains("conv_transpose2d: input is float32 but weight is float64"));
  CHECK_THROWS_WITH(ember::nn::ConvTranspose2d(4, 6, 3, {.groups = 4}),
                    Contains("conv_transpose2d: out_channels (6) must be divisible by groups (4)"));
  CHECK_THROWS_WITH(ember::nn::ConvTranspose2d(0, 6, 3), Contains("ConvTranspose2d: channels and kernel_size must be positive"));
}
