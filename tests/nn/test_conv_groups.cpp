// conv2d with groups (issue 17): the general grouped path and the depthwise kernels against
// PyTorch (tests/gen_conv_groups_fixtures.py), float64 finite-difference gradients, nn::Conv2d's
// grouped weight and init, and the error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/conv.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
namespace nn = ember::nn;
using ember::Tensor;
using namespace ember::test;

namespace {

// The options tensor: [stride h, w, padding h, w, dilation h, w, bias, groups].
void check_fixture(const std::string& name) {
  auto f = fixture("conv_groups_" + name);
  Tensor o = f.at("options");
  auto at = [&](int64_t i) { return o.at<int64_t>({i}); };
  const bool has_bias = at(6) != 0;
  const F::Conv2dOptions options{.stride = {at(0), at(1)}, .padding = {at(2), at(3)},
                                 .dilation = {at(4), at(5)}, .groups = at(7)};
  Tensor x = leaf(f.at("x")), w = leaf(f.at("w"));
  Tensor b = has_bias ? leaf(f.at("b")) : Tensor();
  Tensor y = F::conv2d(x, w, b, options);
  require_close(y, f.at("y"), name + " forward");
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + " input gradient");
  require_close(w.grad(), f.at("dw"), name + " weight gradient");
  if (has_bias) require_close(b.grad(), f.at("db"), name + " bias gradient");
}

}  // namespace

TEST_CASE("grouped conv2d matches PyTorch's output and gradients", "[conv_groups]") {
  for (std::string name : {"g2", "g3_odd"}) check_fixture(name);
}

TEST_CASE("depthwise conv2d matches PyTorch: 3x3 stride 1 and 2, multiplier 2, dilated 5x5 batch 1",
          "[conv_groups]") {
  for (std::string name : {"dw_s1", "dw_s2", "dw_mult2", "dw5_dilated_batch1"}) check_fixture(name);
}

TEST_CASE("grouped and depthwise conv2d gradients match finite differences", "[conv_groups]") {
  ember::manual_seed(17);
  struct Case {
    ember::Shape x, w;
    int64_t groups, stride, padding, dilation;
    bool bias;
  };
  for (const Case& c : std::vector<Case>{
           {{2, 6, 5, 7}, {4, 3, 3, 2}, 2, 1, 1, 1, true},      // grouped, odd sizes
           {{1, 9, 6, 5}, {6, 3, 2, 3}, 3, 2, 1, 1, false},     // groups 3, batch 1, stride 2
           {{2, 5, 7, 6}, {5, 1, 3, 3}, 5, 1, 1, 1, true},      // depthwise 3x3
           {{1, 3, 9, 8}, {6, 1, 3, 3}, 3, 2, 1, 1, true},      // depthwise, multiplier 2, stride 2
           {{1, 4, 9, 9}, {4, 1, 3, 3}, 4, 1, 2, 2, false}}) {  // depthwise, dilated
    std::vector<Tensor> inputs{ember::randn(c.x), ember::randn(c.w)};
    if (c.bias) inputs.push_back(ember::randn({c.w[0]}));
    check_gradients("conv2d groups " + std::to_string(c.groups) + " x" + ember::shape_str(c.x),
                    [&](const std::vector<Tensor>& in) {
                      return F::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(),
                                       {.stride = c.stride, .padding = c.padding, .dilation = c.dilation,
                                        .groups = c.groups});
                    },
                    inputs);
  }
}

TEST_CASE("grouped and depthwise conv2d take non-contiguous inputs", "[conv_groups]") {
  ember::manual_seed(18);
  // x stored as [N, C, W, H] and transposed inside: conv2d sees a non-contiguous input, and its
  // gradient flows back through the transpose.
  for (int64_t groups : {2, 6}) {
    const int64_t out = groups == 6 ? 6 : 4;
    std::vector<Tensor> inputs{ember::randn({1, 6, 5, 7}), ember::randn({out, 6 / groups, 3, 3})};
    check_gradients("conv2d non-contiguous, groups " + std::to_string(groups),
                    [&](const std::vector<Tensor>& in) {
                      Tensor x = in[0].transpose(2, 3);
                      REQUIRE_FALSE(x.is_contiguous());
                      return F::conv2d(x, in[1], Tensor(), {.padding = 1, .groups = groups});
                    },
                    inputs);
  }
}

TEST_CASE("nn::Conv2d with groups: weight [out, in / groups, kH, kW], PyTorch's init bound, repr",
          "[conv_groups]") {
  ember::manual_seed(5);
  nn::Conv2d conv(6, 9, 3, {.padding = 1, .groups = 3});
  REQUIRE(conv.weight.sizes() == ember::Shape{9, 2, 3, 3});
  // kaiming_uniform_(a = sqrt(5)): bound = 1 / sqrt(fan_in), fan_in = in / groups * kH * kW = 18;
  // the bias shares the bound.
  const double bound = 1.0 / std::sqrt(18.0);
  CHECK(ember::max(ember::abs(conv.weight)).item<float>() <= bound);
  CHECK(ember::max(ember::abs(conv.bias)).item<float>() <= bound);
  CHECK(ember::max(ember::abs(conv.weight)).item<float>() > 0.8 * bound);
  CHECK(conv.repr() == "Conv2d(6, 9, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=3)");
  Tensor y = conv.forward(ember::randn({2, 6, 5, 5}));
  CHECK(y.sizes() == ember::Shape{2, 9, 5, 5});
  nn::Conv2d depthwise(8, 8, 3, {.groups = 8, .bias = false});
  CHECK(depthwise.weight.sizes() == ember::Shape{8, 1, 3, 3});
  CHECK(depthwise.repr() == "Conv2d(8, 8, kernel_size=(3, 3), stride=(1, 1), groups=8, bias=False)");
}

TEST_CASE("conv2d with groups rejects bad channel counts with clear messages", "[conv_groups]") {
  const Tensor none;
  CHECK_THROWS_WITH(F::conv2d(ember::randn({1, 6, 8, 8}), ember::randn({4, 1, 3, 3}), none, {.groups = 4}),
                    Catch::Contains("conv2d: in_channels (6) must be divisible by groups (4)"));
  CHECK_THROWS_WITH(F::conv2d(ember::randn({1, 6, 8, 8}), ember::randn({5, 2, 3, 3}), none, {.groups = 3}),
                    Catch::Contains("conv2d: out_channels (5) must be divisible by groups (3)"));
  CHECK_THROWS_WITH(F::conv2d(ember::randn({1, 6, 8, 8}), ember::randn({6, 3, 3, 3}), none, {.groups = 3}),
                    Catch::Contains("conv2d: weight [6, 3, 3, 3] must have in_channels / groups = 6 / 3 = 2 in dim 1, "
                                    "got 3"));
  CHECK_THROWS_WITH(F::conv2d(ember::randn({1, 6, 8, 8}), ember::randn({6, 1, 3, 3}), none, {.groups = 0}),
                    Catch::Contains("conv2d: groups must be positive, got 0"));
  CHECK_THROWS_WITH(nn::Conv2d(6, 4, 3, {.groups = 4}),
                    Catch::Contains("conv2d: in_channels (6) must be divisible by groups (4)"));
  CHECK_THROWS_WITH(nn::Conv2d(6, 5, 3, {.groups = 3}),
                    Catch::Contains("conv2d: out_channels (5) must be divisible by groups (3)"));
  CHECK_THROWS_WITH(nn::Conv2d(6, 6, 3, {.groups = -1}), Catch::Contains("conv2d: groups must be positive, got -1"));
}
