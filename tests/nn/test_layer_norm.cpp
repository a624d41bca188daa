// LayerNorm and F::layer_norm: PyTorch's values (tests/gen_norm_fixtures.py), float64 finite
// differences over odd shapes, batch 1 and non-contiguous inputs, the same bits on 1 and 2
// threads, the module's parameters, and the error messages.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/threading.h"
#include "ember/nn/functional.h"
#include "ember/nn/normalization.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Shape;
using ember::Tensor;
using namespace ember::test;
using Catch::Matchers::Contains;

namespace {

Shape shape_of(const Tensor& sizes) {
  Shape shape;
  for (int64_t i = 0; i < sizes.numel(); ++i) shape.push_back(sizes.data<int64_t>()[i]);
  return shape;
}

// One forward and backward of an ember LayerNorm built with the fixture's options.
void check_fixture(const std::string& name) {
  auto f = fixture("norm_" + name);
  const Tensor o = f.at("options");
  const bool affine = o.at<double>({1}) != 0;
  ember::nn::LayerNorm layer(shape_of(f.at("normalized_shape")),
                             {.eps = o.at<double>({0}), .elementwise_affine = affine});
  layer.to(f.at("x").dtype());
  if (affine) {
    ember::NoGradGuard no_grad;
    layer.weight.copy_(f.at("weight"));
    layer.bias.copy_(f.at("bias"));
  }
  const double tol = f.at("x").dtype() == ember::kFloat64 ? 1e-12 : 1e-5;
  Tensor x = leaf(f.at("x"));
  Tensor y = layer(x);
  require_close(y, f.at("y"), name + ": forward", tol);
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + ": input gradient", tol);
  if (affine) {
    require_close(layer.weight.grad(), f.at("dweight"), name + ": weight gradient", tol);
    require_close(layer.bias.grad(), f.at("dbias"), name + ": bias gradient", tol);
  }
}

}  // namespace

TEST_CASE("LayerNorm matches PyTorch over the last one or two dims, affine or not, float32 and float64") {
  for (const char* name : {"ln_tokens", "ln_last2", "ln_noaffine", "ln_f64"}) check_fixture(name);
}

TEST_CASE("layer_norm gradients match finite differences: odd shapes, batch 1, non-contiguous, lone weight or bias") {
  ember::manual_seed(41);
  const auto with_both = [](const Shape& normalized) {
    return [normalized](const std::vector<Tensor>& in) { return F::layer_norm(in[0], normalized, in[1], in[2]); };
  };
  check_gradients("[3, 7] over [7]", with_both({7}),
                  {ember::randn({3, 7}), ember::add(ember::randn({7}), 1.0), ember::randn({7})});
  check_gradients("[1, 5] (one row)", with_both({5}), {ember::randn({1, 5}), ember::randn({5}), ember::randn({5})});
  check_gradients("[2, 3, 4, 5] over [4, 5]", with_both({4, 5}),
                  {ember::randn({2, 3, 4, 5}), ember::randn({4, 5}), ember::randn({4, 5})});
  check_gradients("transposed input", [](const std::vector<Tensor>& in) {
    return F::layer_norm(in[0].transpose(0, 1), {6}, in[1], in[2]);
  }, {ember::randn({6, 4}, {.dtype = ember::kFloat64}), ember::randn({6}), ember::randn({6})});
  check_gradient("no affine", [](const Tensor& x) { return F::layer_norm(x, {9}, Tensor(), Tensor(), 1e-3); },
                 ember::randn({4, 9}));
  check_gradients("weight alone", [](const std::vector<Tensor>& in) { return F::layer_norm(in[0], {5}, in[1]); },
                  {ember::randn({3, 5}), ember::randn({5})});
  check_gradients("bias alone", [](const std::vector<Tensor>& in) {
    return F::layer_norm(in[0], {5}, Tensor(), in[1]);
  }, {ember::randn({3, 5}), ember::randn({5})});
  check_gradient("one column (a constant output)", [](const Tensor& x) {
    return F::layer_norm(x, {1}, Tensor(), Tensor());
  }, ember::randn({4, 1}));
}

TEST_CASE("layer_norm gives the same bits on 1 and 2 threads, forward and backward") {
  ember::manual_seed(42);
  // Large enough for the threaded path: rows split for the forward and dx, columns for dweight.
  Tensor x = ember::randn({64, 32, 128}), w = ember::randn({128}), b = ember::randn({128}), dy = ember::randn({64, 32, 128});
  const int threads = ember::get_num_threads();
  std::vector<Tensor> results[2];
  for (int run = 0; run < 2; ++run) {
    ember::set_num_threads(run == 0 ? 1 : 2);
    Tensor xl = leaf(x), wl = leaf(w), bl = leaf(b);
    Tensor y = F::layer_norm(xl, {128}, wl, bl);
    y.backward(dy);
    results[run] = {y.detach(), xl.grad(), wl.grad(), bl.grad()};
  }
  ember::set_num_threads(threads);
  for (size_t i = 0; i < 4; ++i) CHECK(ember::allclose(results[0][i], results[1][i], 0.0, 0.0));
}

TEST_CASE("layer_norm subtracts the mean before scaling: a one-element row comes out exactly 0") {
  // x * invstd - mean * invstd would leave rounding noise of the size of x * invstd (here ~300x).
  Tensor x = ember::add(ember::mul(ember::randn({64, 1}), 10.0), 100.0);
  CHECK(ember::allclose(F::layer_norm(x, {1}), ember::zeros({64, 1}), 0.0, 0.0));
}

TEST_CASE("LayerNorm registers weight and bias of normalized_shape and prints as PyTorch does") {
  ember::nn::LayerNorm layer({4, 10});
  auto params = layer.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "weight");
  CHECK(params[1].first == "bias");
  CHECK(layer.weight.sizes() == Shape{4, 10});
  CHECK(ember::allclose(layer.weight, ember::ones({4, 10})));
  CHECK(ember::allclose(layer.bias, ember::zeros({4, 10})));
  CHECK(layer.extra_repr() == "(4, 10), eps=1e-05, elementwise_affine=True");
  ember::nn::LayerNorm plain(10, {.eps = 1e-3, .elementwise_affine = false});
  CHECK(plain.named_parameters().empty());
  CHECK(plain.extra_repr() == "(10,), eps=0.001, elementwise_affine=False");
  // Evaluation normalises the same way: there are no running statistics.
  Tensor x = ember::randn({3, 10});
  plain.eval();
  Tensor y = plain(x);
  CHECK(ember::allclose(ember::mean(y, {1}), ember::zeros({3}), 0.0, 1e-6));
}

TEST_CASE("layer_norm and LayerNorm reject bad arguments with messages naming the op") {
  Tensor x = ember::randn({20, 5, 5});
  CHECK_THROWS_WITH(F::layer_norm(x, {10}),
                    Contains("layer_norm: expected input of shape [*, 10] (normalized_shape [10]), got input [20, 5, 5]"));
  CHECK_THROWS_WITH(F::layer_norm(ember::randn({5}), {2, 5}),
                    Contains("layer_norm: expected input of shape [*, 2, 5] (normalized_shape [2, 5]), got input [5]"));
  CHECK_THROWS_WITH(F::layer_norm(x, {}), Contains("layer_norm: expected normalized_shape with at least one dim, got []"));
  CHECK_THROWS_WITH(F::layer_norm(x, {5}, ember::ones({4})),
                    Contains("layer_norm: expected weight of shape normalized_shape [5], got weight of shape [4]"));
  CHECK_THROWS_WITH(F::layer_norm(x, {5}, Tensor(), ember::ones({5}, {.dtype = ember::kFloat64})),
                    Contains("layer_norm: input is float32 but bias is float64"));
  CHECK_THROWS_WITH(F::layer_norm(ember::arange(6.0, {.dtype = ember::kInt64}), {6}),
                    Contains("layer_norm: input must be float32 or float64, got int64"));
  CHECK_THROWS_WITH(ember::nn::LayerNorm(Shape{}), Contains("LayerNorm: normalized_shape must have at least one dim"));
  CHECK_THROWS_WITH(ember::nn::LayerNorm({3, 0}), Contains("LayerNorm: normalized_shape sizes must be positive, got [3, 0]"));
  ember::nn::LayerNorm layer(10);
  CHECK_THROWS_WITH(layer(ember::randn({64, 784})),
                    Contains("layer_norm: expected input of shape [*, 10] (normalized_shape [10]), got input [64, 784]"));
}
