// Finite-difference gradient checks (float64) of every functional op, and their error messages.
#include <catch2/catch.hpp>

#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

TEST_CASE("conv2d gradients match finite differences over stride, padding and dilation variants") {
  ember::manual_seed(3);
  struct Case { ember::Shape x, w; int64_t stride, padding, dilation; bool bias; };
  for (const Case& c : std::vector<Case>{{{1, 1, 5, 5}, {2, 1, 3, 3}, 1, 0, 1, true},
                                         {{2, 3, 7, 6}, {4, 3, 3, 2}, 2, 1, 1, true},
                                         {{2, 2, 8, 7}, {3, 2, 2, 3}, 1, 2, 2, false},
                                         {{1, 5, 6, 9}, {1, 5, 1, 1}, 3, 0, 1, true}}) {
    std::vector<Tensor> inputs{ember::randn(c.x), ember::randn(c.w)};
    if (c.bias) inputs.push_back(ember::randn({c.w[0]}));
    check_gradients("conv2d x" + ember::shape_str(c.x), [&](const std::vector<Tensor>& in) {
      return F::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(),
                       {.stride = c.stride, .padding = c.padding, .dilation = c.dilation});
    }, inputs);
  }
}

TEST_CASE("conv2d accepts non-contiguous inputs and gives the contiguous result") {
  Tensor x = ember::randn({2, 3, 6, 5}).transpose(2, 3);
  Tensor w = ember::randn({4, 3, 3, 3});
  REQUIRE_FALSE(x.is_contiguous());
  CHECK(ember::allclose(F::conv2d(x, w), F::conv2d(x.contiguous(), w), 1e-5, 1e-5));
}

TEST_CASE("max_pool2d, relu and linear gradients match finite differences") {
  ember::manual_seed(4);
  // Distinct values keep the argmax away from ties, where the max is not differentiable.
  Tensor pool_input = ember::add(ember::mul(ember::randn({2, 3, 7, 6}), 0.1),
                                 ember::arange(0.0, 252.0, 1.0, {.dtype = ember::kFloat32}).reshape({2, 3, 7, 6}));
  check_gradients("max_pool2d k2", [](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], 2); }, {pool_input});
  check_gradients("max_pool2d k3 s2 p1", [](const std::vector<Tensor>& in) {
    return F::max_pool2d(in[0], 3, {.stride = 2, .padding = 1});
  }, {ember::randn({1, 2, 7, 8})});
  Tensor away_from_zero = ember::add(ember::randn({3, 4}), 0.0);
  check_gradients("relu", [](const std::vector<Tensor>& in) { return F::relu(in[0]); }, {away_from_zero});
  check_gradients("linear", [](const std::vector<Tensor>& in) { return F::linear(in[0], in[1], in[2]); },
                  {ember::randn({5, 7}), ember::randn({3, 7}), ember::randn({3})});
  check_gradients("linear 3-D input, transposed weight view", [](const std::vector<Tensor>& in) {
    return F::linear(in[0], in[1].t());
  }, {ember::randn({2, 3, 4}), ember::randn({4, 6})});
}

TEST_CASE("linear with 0 input or 0 output features: the bias, an empty output, zero gradients") {
  // Leading dimensions of 0 are invalid for gemm (and cuBLAS); the layer must still work.
  Tensor x = ember::randn({3, 0}).requires_grad_(), w = ember::randn({4, 0}).requires_grad_();
  Tensor b = ember::randn({4}).requires_grad_();
  Tensor y = F::linear(x, w, b);
  REQUIRE(y.sizes() == ember::Shape{3, 4});
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t j = 0; j < 4; ++j) CHECK(y.data<float>()[r * 4 + j] == b.data<float>()[j]);
  }
  ember::sum(y).backward();
  CHECK(x.grad().sizes() == ember::Shape{3, 0});
  CHECK(w.grad().sizes() == ember::Shape{4, 0});
  for (int64_t j = 0; j < 4; ++j) CHECK(b.grad().data<float>()[j] == 3.0f);

  Tensor x2 = ember::randn({3, 5}).requires_grad_(), w2 = ember::randn({0, 5}).requires_grad_();
  Tensor y2 = F::linear(x2, w2);
  REQUIRE(y2.sizes() == ember::Shape{3, 0});
  ember::sum(y2).backward();
  REQUIRE(x2.grad().sizes() == ember::Shape{3, 5});
  for (int64_t i = 0; i < 15; ++i) CHECK(x2.grad().data<float>()[i] == 0.0f);
  CHECK(w2.grad().sizes() == ember::Shape{0, 5});
}

TEST_CASE("log_softmax, nll_loss, cross_entropy and mse_loss gradients match finite differences") {
  ember::manual_seed(5);
  Tensor target = ember::tensor(std::vector<int64_t>{2, 0, 4, 1});
  check_gradients("log_softmax", [](const std::vector<Tensor>& in) { return F::log_softmax(in[0], 1); },
                  {ember::randn({4, 5})});
  for (auto reduction : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None}) {
    check_gradients("cross_entropy", [&](const std::vector<Tensor>& in) {
      return F::cross_entropy(in[0], target, reduction);
    }, {ember::randn({4, 5})});
    check_gradients("nll_loss", [&](const std::vector<Tensor>& in) {
      return F::nll_loss(F::log_softmax(in[0], 1), target, reduction);
    }, {ember::randn({4, 5})});
    check_gradients("mse_loss", [&](const std::vector<Tensor>& in) {
      return F::mse_loss(in[0], in[1], reduction);
    }, {ember::randn({3, 2}), ember::randn({3, 2})});
  }
}

TEST_CASE("dropout zeroes about p of the elements, scales the rest, and its gradient uses the same mask") {
  ember::manual_seed(6);
  Tensor x = ember::ones({10000}).requires_grad_();
  Tensor y = F::dropout(x, 0.25, true);
  double kept = ember::sum(ember::gt(y.detach(), 0.0).to(ember::kFloat64)).item<double>();
  CHECK(kept / 10000 == Approx(0.75).margin(0.02));
  CHECK(ember::max(y.detach()).item<float>() == Approx(1.0 / 0.75));
  y.sum().backward();
  CHECK(ember::allclose(x.grad(), y.detach()));
  CHECK(F::dropout(x, 0.25, false).is_same(x));
  ember::manual_seed(6);
  Tensor again = F::dropout(x.detach(), 0.25, true);
  CHECK(ember::allclose(again, y.detach()));
}

TEST_CASE("functional ops reject bad input with messages naming the op and the shapes") {
  Tensor x = ember::randn({64, 784});
  REQUIRE_THROWS_WITH(F::conv2d(x, ember::randn({10, 1, 5, 5})),
                      "conv2d: input must be 4-D [N, C, H, W], got [64, 784]");
  REQUIRE_THROWS_WITH(F::conv2d(ember::randn({2, 3, 8, 8}), ember::randn({10, 1, 5, 5})),
                      Catch::Contains("input has 3 channels but weight [10, 1, 5, 5] expects 1"));
  REQUIRE_THROWS_WITH(F::conv2d(ember::randn({1, 1, 4, 4}), ember::randn({1, 1, 5, 5})),
                      Catch::Contains("kernel 5x5 (dilated 5x5) is larger than the padded input 4x4"));
  REQUIRE_THROWS_WITH(F::conv2d(ember::randn({1, 1, 8, 8}), ember::randn({1, 1, 3, 3}), Tensor(), {.stride = 0}),
                      Catch::Contains("conv2d: stride must be positive, got 0"));
  REQUIRE_THROWS_WITH(F::conv2d(ember::randn({1, 6, 8, 8}), ember::randn({4, 1, 3, 3}), Tensor(), {.groups = 4}),
                      Catch::Contains("conv2d: in_channels (6) must be divisible by groups (4)"));
  REQUIRE_THROWS_WITH(F::max_pool2d(ember::randn({8, 8}), 2), Catch::Contains("max_pool2d: input must be 4-D"));
  REQUIRE_THROWS_WITH(F::max_pool2d(ember::randn({1, 1, 8, 8}), 2, {.stride = -1}),
                      Catch::Contains("stride must be positive, got -1"));
  REQUIRE_THROWS_WITH(F::linear(x, ember::randn({10, 320})),
                      Catch::Contains("linear: input [64, 784] has 784 features but weight [10, 320] expects 320"));
  Tensor logits = ember::randn({4, 10});
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, ember::tensor(std::vector<int64_t>{1, 2, 12, 3})),
                      "cross_entropy: target[2] = 12 is out of range for 10 classes (expected [0, 9])");
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, ember::tensor(std::vector<float>{1, 2, 3, 4})),
                      Catch::Contains("target must be int64 class indices, got float32"));
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, ember::tensor(std::vector<int64_t>{1, 2})),
                      Catch::Contains("target must be [4] to match input [4, 10], got [2]"));
  REQUIRE_THROWS_WITH(F::nll_loss(logits, ember::tensor(std::vector<int64_t>{0, -1, 0, 0})),
                      Catch::Contains("nll_loss: target[1] = -1 is out of range"));
  REQUIRE_THROWS_WITH(F::dropout(logits, 1.5), Catch::Contains("dropout: probability must be in [0, 1], got 1.5"));
}
