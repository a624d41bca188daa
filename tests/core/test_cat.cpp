// cat, stack, split and chunk: values, finite-difference gradients (float64), non-contiguous
// inputs, PyTorch's special cases and the error messages. PyTorch's own values are checked in
// tests/nn/test_shape_pytorch.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "nn/reference.h"

using ember::Shape;
using ember::Tensor;
using namespace ember::test;

namespace {

// cat, stack, split and chunk only move values: their gradients are held to 1e-6, tighter than
// the default. The inputs are float64 already and reach the op as given, views included.
const GradcheckOptions kTight{.tol = 1e-6};

Tensor f64(Shape shape) { return ember::randn(std::move(shape), {.dtype = ember::kFloat64}); }

// The element-by-element expectation of cat along `dim`, through at<double>() and a flat walk.
Tensor naive_cat(const std::vector<Tensor>& ts, int64_t dim) {
  Shape shape = ts[0].sizes();
  shape[dim] = 0;
  for (const Tensor& t : ts) shape[dim] += t.size(dim);
  Tensor out = ember::zeros(shape, {.dtype = ember::kFloat64});
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
  double* o = out.data<double>();
  int64_t start = 0;
  for (const Tensor& t : ts) {
    Tensor c = t.to(ember::kFloat64).contiguous();
    const double* s = c.data<double>();
    const int64_t n = t.size(dim);
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t j = 0; j < n * inner; ++j) o[(a * shape[dim] + start) * inner + j] = s[a * n * inner + j];
    }
    start += n;
  }
  return out;
}

}  // namespace

TEST_CASE("cat places each input at its offset along the dim, for every dim") {
  ember::manual_seed(1);
  for (int64_t dim = 0; dim < 3; ++dim) {
    Shape a{2, 3, 4}, b{2, 3, 4};
    b[dim] = 5;
    std::vector<Tensor> ts{f64(a), f64(b), f64(a)};
    INFO("dim " << dim);
    CHECK(ember::allclose(ember::cat(ts, dim), naive_cat(ts, dim), 0, 0));
    CHECK(ember::allclose(ember::cat(ts, dim - 3), naive_cat(ts, dim), 0, 0));  // negative dim
  }
}

TEST_CASE("cat reads non-contiguous inputs and writes a contiguous result") {
  Tensor a = f64({4, 3}).t();               // [3, 4], transposed
  Tensor b = f64({3, 8}).narrow(1, 2, 5);   // [3, 5], strided rows
  Tensor c = f64({3, 1}).expand({3, 2});  // stride 0
  REQUIRE_FALSE(a.is_contiguous());
  Tensor y = ember::cat({a, b, c}, 1);
  CHECK(y.is_contiguous());
  CHECK(ember::allclose(y, naive_cat({a, b, c}, 1), 0, 0));
}

TEST_CASE("cat promotes dtypes as PyTorch and takes integer tensors") {
  Tensor i = ember::tensor<int64_t>({1, 2});
  Tensor f = ember::tensor<float>({0.5f});
  Tensor y = ember::cat({i, f});
  CHECK(y.dtype() == ember::kFloat32);
  CHECK(ember::allclose(y, ember::tensor<float>({1, 2, 0.5f})));
  Tensor ints = ember::cat({i, ember::tensor<int64_t>({7})});
  CHECK(ints.dtype() == ember::kInt64);
  CHECK(ints.at<int64_t>({2}) == 7);
  Tensor b = ember::cat({ember::tensor<uint8_t>({1}).to(ember::kBool), ember::tensor<uint8_t>({3})});
  CHECK(b.dtype() == ember::kUInt8);
}

TEST_CASE("cat skips empty 1-D tensors as PyTorch 1.13 does, and keeps empty slices of the right shape") {
  Tensor x = f64({2, 3});
  Tensor y = ember::cat({ember::empty({0}, {.dtype = ember::kFloat64}), x, ember::empty({0})}, 1);
  CHECK(y.sizes() == Shape{2, 3});
  CHECK(ember::allclose(y, x, 0, 0));
  CHECK(ember::cat({x, ember::empty({2, 0}, {.dtype = ember::kFloat64})}, 1).sizes() == Shape{2, 3});
  CHECK(ember::cat({ember::empty({0}), ember::empty({0})}).sizes() == Shape{0});
}

TEST_CASE("cat gradients match finite differences over dims, batch 1, odd sizes and non-contiguous inputs") {
  ember::manual_seed(7);
  check_gradients("cat dim 0", [](const std::vector<Tensor>& in) { return ember::cat(in, 0); },
                  {f64({1, 3, 5}), f64({3, 3, 5})}, kTight);
  check_gradients("cat dim -1", [](const std::vector<Tensor>& in) { return ember::cat(in, -1); },
                  {f64({1, 3, 1}), f64({1, 3, 7}), f64({1, 3, 2})}, kTight);
  check_gradients("cat non-contiguous", [](const std::vector<Tensor>& in) { return ember::cat(in, 1); },
                  {f64({5, 3}).t(), f64({3, 9}).narrow(1, 1, 4)}, kTight);
}

TEST_CASE("cat of a float32 and a float64 input returns each gradient in its input's dtype") {
  Tensor a = ember::randn({2, 3}).requires_grad_();
  Tensor b = f64({1, 3}).requires_grad_();
  Tensor c = ember::tensor<int64_t>({1, 2, 3}).reshape({1, 3});  // needs no gradient
  ember::sum(ember::cat({a, b, c})).backward();
  CHECK(a.grad().dtype() == ember::kFloat32);
  CHECK(b.grad().dtype() == ember::kFloat64);
  CHECK(ember::allclose(a.grad(), ember::ones({2, 3})));
}

TEST_CASE("stack adds a new dim at any position, with gradients") {
  ember::manual_seed(11);
  Tensor a = f64({2, 3}), b = f64({2, 3});
  CHECK(ember::stack({a, b}).sizes() == Shape{2, 2, 3});
  Tensor s = ember::stack({a, b}, 1);
  CHECK(s.sizes() == Shape{2, 2, 3});
  CHECK(ember::allclose(s.select(1, 1), b, 0, 0));
  Tensor last = ember::stack({a, b, a}, -1);
  CHECK(last.sizes() == Shape{2, 3, 3});
  CHECK(ember::allclose(last.select(2, 2), a, 0, 0));
  check_gradients("stack dim 2", [](const std::vector<Tensor>& in) { return ember::stack(in, 2); },
                  {f64({1, 5}), f64({5, 2}).t().narrow(0, 1, 1)}, kTight);
}

TEST_CASE("split and chunk return views of PyTorch's sizes whose gradients flow back") {
  Tensor x = f64({7, 4});
  auto pieces = ember::split(x, 3);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].sizes() == Shape{1, 4});
  CHECK(pieces[1].data_ptr() == x.narrow(0, 3, 3).data_ptr());  // a view, no copy
  auto sized = ember::split(x, std::vector<int64_t>{1, 0, 3}, -1);
  REQUIRE(sized.size() == 3);
  CHECK(sized[1].sizes() == Shape{7, 0});
  CHECK(ember::allclose(sized[2], x.narrow(1, 1, 3), 0, 0));
  // torch.chunk(torch.empty(6), 4): ceil(6 / 4) = 2 per piece, so 3 pieces, not 4.
  CHECK(ember::chunk(f64({6}), 4).size() == 3);
  CHECK(ember::chunk(f64({5, 6}), 3, 1).size() == 3);
  CHECK(ember::chunk(f64({0, 2}), 3).size() == 3);  // a dim of size 0: chunks empty pieces
  CHECK(ember::split(f64({0, 2}), 2).size() == 1);
  check_gradients("split then cat reversed", [](const std::vector<Tensor>& in) {
    auto p = ember::split(in[0], std::vector<int64_t>{2, 1, 2}, 1);
    return ember::cat({ember::mul(p[2], 3.0), p[0]}, 1);
  }, {f64({3, 5})}, kTight);
  check_gradients("chunk of a non-contiguous input", [](const std::vector<Tensor>& in) {
    auto p = ember::chunk(in[0], 2, 0);
    return ember::mul(p[0], p[1]);
  }, {f64({3, 4}).t()}, kTight);
}

TEST_CASE("cat, stack, split and chunk name the op and the offending shapes in their errors") {
  Tensor a = ember::zeros({2, 3, 4}), b = ember::zeros({2, 5, 5});
  CHECK_THROWS_WITH(ember::cat({a, b}, 1),
                    Catch::Contains("cat: tensors must have the same shape except in dim 1, got [2, 3, 4] and [2, 5, 5]"));
  CHECK_THROWS_WITH(ember::cat({a, ember::zeros({2, 3})}, 0),
                    Catch::Contains("cat: tensors must have the same shape except in dim 0, got [2, 3, 4] and [2, 3]"));
  CHECK_THROWS_WITH(ember::cat({}, 0), Catch::Contains("cat: expected a non-empty list of tensors"));
  CHECK_THROWS_WITH(ember::cat({a, ember::zeros({})}),
                    Catch::Contains("cat: zero-dimensional tensor (at position 1) cannot be concatenated"));
  CHECK_THROWS_WITH(ember::cat({a, a}, 3), Catch::Contains("cat: dim 3 is out of range for a tensor with 3 dims"));
  CHECK_THROWS_WITH(ember::stack({a, b}), Catch::Contains("stack: expected each tensor to be equal size, got [2, 3, 4] at entry 0 and [2, 5, 5] at entry 1"));
  CHECK_THROWS_WITH(ember::stack({a}, 4), Catch::Contains("stack: dim 4 is out of range for a tensor with 4 dims"));
  CHECK_THROWS_WITH(ember::split(a, std::vector<int64_t>{1, 1}, 1),
                    Catch::Contains("split: split sizes [1, 1] sum to 2 but dim 1 of the tensor [2, 3, 4] has size 3"));
  CHECK_THROWS_WITH(ember::split(a, -1), Catch::Contains("split: expected a non-negative split_size, got -1"));
  CHECK_THROWS_WITH(ember::split(a, 0), Catch::Contains("split: split_size can only be 0 if the dim's size is 0, got size 2 in dim 0"));
  CHECK_THROWS_WITH(ember::chunk(a, 0), Catch::Contains("chunk: expected chunks > 0, got 0"));
  CHECK_THROWS_WITH(ember::chunk(ember::zeros({}), 2), Catch::Contains("chunk: expected a tensor with at least one dim"));
}
