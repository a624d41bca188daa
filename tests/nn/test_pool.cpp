// avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and max_pool2d with ceil_mode and dilation:
// against PyTorch's values (tests/gen_pool_fixtures.py), against float64 finite differences over
// random shapes (odd sizes, batch 1, 3-D and non-contiguous inputs), and their error messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

namespace {

// Runs the op a pool fixture names (its "options" tensor: see tests/gen_pool_fixtures.py).
Tensor run_fixture_op(const Tensor& x, const Tensor& o) {
  auto at = [&](int64_t i) { return o.at<int64_t>({i}); };
  const ember::nn::ExpandingArray<2> kernel{at(1), at(2)}, stride{at(3), at(4)}, padding{at(5), at(6)};
  switch (at(0)) {
    case 0:
      return F::max_pool2d(x, kernel,
                           {.stride = stride, .padding = padding, .dilation = {at(7), at(8)}, .ceil_mode = at(9) != 0});
    case 1: {
      F::AvgPool2dOptions options{.stride = stride, .padding = padding, .ceil_mode = at(9) != 0,
                                  .count_include_pad = at(10) != 0};
      if (at(11) != 0) options.divisor_override = at(11);
      return F::avg_pool2d(x, kernel, options);
    }
    case 2:
      return F::adaptive_avg_pool2d(x, {at(12), at(13)});
    default:
      return F::adaptive_max_pool2d(x, {at(12), at(13)});
  }
}

void check_pool_fixture(const std::string& name) {
  auto f = fixture("pool_" + name);
  Tensor x = leaf(f.at("x"));
  Tensor y = run_fixture_op(x, f.at("options"));
  require_close(y, f.at("y"), name + " forward");
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + " input gradient");
}

// Distinct values at least 0.01 apart in a random order (a max is differentiable only away from
// ties, and finite differences need the gap to exceed eps).
Tensor distinct_values(const ember::Shape& shape) {
  Tensor noise = ember::rand(shape, {.dtype = ember::kFloat64});
  Tensor t = ember::empty(shape, {.dtype = ember::kFloat64});
  const int64_t n = t.numel();
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  // Sorting by the uniform noise gives a random permutation.
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return noise.data<double>()[a] < noise.data<double>()[b]; });
  for (int64_t i = 0; i < n; ++i) t.data<double>()[order[i]] = 0.01 * static_cast<double>(i) - 0.005 * n;
  return t;
}

std::string str(const ember::Shape& s) { return ember::shape_str(s); }

}  // namespace

TEST_CASE("avg_pool2d matches PyTorch: ResNet shape, ceil_mode, count_include_pad, divisor_override") {
  for (std::string name : {"avg_resnet", "avg_ceil_exclude_pad", "avg_ceil_include_pad", "avg_divisor",
                           "avg_rect_exclude_pad", "avg_3d_batch1"}) {
    check_pool_fixture(name);
  }
}

TEST_CASE("adaptive_avg_pool2d and adaptive_max_pool2d match PyTorch: global, 7x10 to 3x3, 11x9 to 5x4") {
  for (std::string name : {"adaptive_avg_global", "adaptive_avg_3x3", "adaptive_avg_5x4", "adaptive_max_global",
                           "adaptive_max_3x3", "adaptive_max_5x4"}) {
    check_pool_fixture(name);
  }
}

TEST_CASE("max_pool2d matches PyTorch with ceil_mode and dilation") {
  for (std::string name : {"max_ceil", "max_ceil_resnet", "max_dilated", "max_dilated_rect_ceil"}) {
    check_pool_fixture(name);
  }
}

TEST_CASE("pooling gradients match finite differences over random shapes, 3-D and non-contiguous inputs") {
  ember::manual_seed(17);
  std::mt19937 rng(17);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 6; ++round) {
    const int64_t n = round == 0 ? 1 : pick(1, 2), c = pick(1, 3), h = pick(3, 9), w = pick(3, 9);
    const ember::Shape shape{n, c, h, w};
    const int64_t k = pick(1, 3), stride = pick(1, 3), pad = pick(0, static_cast<int>(k / 2));
    const bool ceil_mode = pick(0, 1) != 0, include_pad = pick(0, 1) != 0;
    const std::string what = str(shape) + " k" + std::to_string(k) + " s" + std::to_string(stride) + " p" +
                             std::to_string(pad) + (ceil_mode ? " ceil" : "") + (include_pad ? " include_pad" : "");
    check_gradient("avg_pool2d " + what, [&](const Tensor& x) {
      return F::avg_pool2d(x, k, {.stride = stride, .padding = pad, .ceil_mode = ceil_mode,
                                  .count_include_pad = include_pad});
    }, ember::randn(shape));
    const int64_t dilation = pick(1, 2);
    if (pad * 2 <= (k - 1) * dilation + 1) {
      check_gradient("max_pool2d d" + std::to_string(dilation) + " " + what, [&](const Tensor& x) {
        return F::max_pool2d(x, k, {.stride = stride, .padding = pad, .dilation = dilation, .ceil_mode = ceil_mode});
      }, distinct_values(shape));
    }
    const int64_t oh = pick(1, static_cast<int>(h)), ow = pick(1, static_cast<int>(w));
    check_gradient("adaptive_avg_pool2d " + str(shape) + " to " + std::to_string(oh) + "x" + std::to_string(ow),
                   [&](const Tensor& x) { return F::adaptive_avg_pool2d(x, {oh, ow}); }, ember::randn(shape));
    check_gradient("adaptive_max_pool2d " + str(shape) + " to " + std::to_string(oh) + "x" + std::to_string(ow),
                   [&](const Tensor& x) { return F::adaptive_max_pool2d(x, {oh, ow}); }, distinct_values(shape));
  }
  // Non-contiguous inputs (a transposed view) and 3-D [C, H, W] inputs, rectangular windows.
  check_gradient("avg_pool2d transposed view, divisor_override", [](const Tensor& x) {
    return F::avg_pool2d(x.transpose(2, 3), {3, 2}, {.stride = {2, 1}, .padding = {1, 1}, .divisor_override = 4});
  }, ember::randn({2, 2, 6, 7}));
  check_gradient("max_pool2d transposed view, dilation (2, 3), ceil", [](const Tensor& x) {
    return F::max_pool2d(x.transpose(2, 3), {2, 3}, {.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 3},
                                                   .ceil_mode = true});
  }, distinct_values({1, 2, 11, 9}));
  check_gradient("adaptive_avg_pool2d 3-D to 1 (global)", [](const Tensor& x) {
    return F::adaptive_avg_pool2d(x, 1);
  }, ember::randn({3, 5, 7}));
  check_gradient("adaptive_max_pool2d 3-D transposed to (4, 2)", [](const Tensor& x) {
    return F::adaptive_max_pool2d(x.transpose(1, 2), {4, 2});
  }, distinct_values({2, 5, 9}));
  check_gradient("adaptive_avg_pool2d upsampling 3x2 to 5x4", [](const Tensor& x) {
    return F::adaptive_avg_pool2d(x, {5, 4});
  }, ember::randn({1, 2, 3, 2}));
}

TEST_CASE("pooling rejects bad arguments with messages naming the op, what it expected and what it got") {
  Tensor x = ember::randn({1, 2, 4, 4});
  CHECK_THROWS_WITH(F::avg_pool2d(ember::randn({4, 4}), 2),
                    Catch::Contains("avg_pool2d: input must be 4-D [N, C, H, W] or 3-D [C, H, W], got [4, 4]"));
  CHECK_THROWS_WITH(F::adaptive_max_pool2d(ember::randn({1, 1, 2, 3, 4}), 2),
                    Catch::Contains("adaptive_max_pool2d: input must be 4-D [N, C, H, W] or 3-D [C, H, W]"));
  CHECK_THROWS_WITH(F::avg_pool2d(ember::ones({1, 1, 4, 4}, {.dtype = ember::kInt64}), 2),
                    Catch::Contains("avg_pool2d: input must be float32 or float64, got int64"));
  CHECK_THROWS_WITH(F::avg_pool2d(x, 5), Catch::Contains("avg_pool2d: the output would be 0x0, it must be at least "
                                                         "1x1 (input [1, 2, 4, 4], kernel 5x5"));
  CHECK_THROWS_WITH(F::max_pool2d(x, 3, {.dilation = 2}),
                    Catch::Contains("max_pool2d: the output would be 0x0, it must be at least 1x1 (input [1, 2, 4, 4], "
                                    "kernel 3x3, stride 3x3, padding 0x0, dilation 2x2, ceil_mode false)"));
  CHECK_THROWS_WITH(F::avg_pool2d(x, 3, {.padding = 2}),
                    Catch::Contains("avg_pool2d: pad should be at most half of kernel size, but got padding=2, "
                                    "kernel_size=3"));
  CHECK_THROWS_WITH(F::max_pool2d(x, 2, {.padding = {1, 3}, .dilation = 3}),
                    Catch::Contains("max_pool2d: pad should be at most half of effective kernel size, but got "
                                    "padding=(1, 3), kernel_size=2 and dilation=3"));
  CHECK_NOTHROW(F::max_pool2d(x, 2, {.padding = 2, .dilation = 3}));  // effective kernel 4
  CHECK_THROWS_WITH(F::avg_pool2d(x, 2, {.stride = {1, 0}}),
                    Catch::Contains("avg_pool2d: stride must be positive, got (1, 0)"));
  CHECK_THROWS_WITH(F::avg_pool2d(x, {0, 2}), Catch::Contains("avg_pool2d: kernel_size must be positive, got (0, 2)"));
  CHECK_THROWS_WITH(F::avg_pool2d(x, 2, {.padding = -1}),
                    Catch::Contains("avg_pool2d: padding must be non-negative, got -1"));
  CHECK_THROWS_WITH(F::avg_pool2d(x, 2, {.divisor_override = 0}),
                    Catch::Contains("avg_pool2d: divisor_override must not be zero"));
  CHECK_THROWS_WITH(F::max_pool2d(x, 2, {.dilation = {1, 0}}),
                    Catch::Contains("max_pool2d: dilation must be positive, got (1, 0)"));
  CHECK_THROWS_WITH(F::adaptive_avg_pool2d(x, {3, 0}),
                    Catch::Contains("adaptive_avg_pool2d: output_size must be positive, got (3, 0)"));
  CHECK_THROWS_WITH(F::adaptive_max_pool2d(ember::randn({1, 2, 0, 4}), 1),
                    Catch::Contains("adaptive_max_pool2d: input height and width must be positive, got [1, 2, 0, 4]"));
  CHECK_THROWS_WITH(F::adaptive_avg_pool2d(Tensor(), 1), Catch::Contains("adaptive_avg_pool2d: input is an undefined tensor"));
}

TEST_CASE("ceil_mode adds a last window only when it starts inside the input or its left padding") {
  // PyTorch: F.max_pool2d(torch.zeros(1, 1, 5, 5), 2, 2, ceil_mode=True).shape == [1, 1, 3, 3]
  // F.avg_pool2d(torch.zeros(1, 1, 6, 6), 3, 2, 1, ceil_mode=True).shape == [1, 1, 4, 4], and
  // F.max_pool2d(torch.zeros(1, 1, 5, 5), 2, 2, 1, ceil_mode=True).shape == [1, 1, 3, 3]: a 4th
  // window would start at 6 - 1 = 5, in the right padding, so it is dropped.
  CHECK(F::max_pool2d(ember::zeros({1, 1, 5, 5}), 2, {.ceil_mode = true}).sizes() == ember::Shape{1, 1, 3, 3});
  CHECK(F::avg_pool2d(ember::zeros({1, 1, 6, 6}), 3, {.stride = 2, .padding = 1, .ceil_mode = true}).sizes() ==
        ember::Shape{1, 1, 4, 4});
  CHECK(F::max_pool2d(ember::zeros({1, 1, 5, 5}), 2, {.padding = 1, .ceil_mode = true}).sizes() ==
        ember::Shape{1, 1, 3, 3});
  CHECK(F::avg_pool2d(ember::zeros({1, 1, 4, 4}), 2, {.stride = 3, .ceil_mode = true}).sizes() ==
        ember::Shape{1, 1, 2, 2});
}
