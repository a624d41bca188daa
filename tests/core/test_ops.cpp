// Element-wise ops, broadcasting, promotion, reductions and matmul.
#include <catch2/catch.hpp>

#include "ember/core/generator.h"
#include "ember/core/ops.h"

using ember::Tensor;

namespace {
// The naive product, for comparing matmul on any layout.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Tensor out = ember::zeros({a.size(0), b.size(1)}, {.dtype = ember::kFloat64});
  for (int64_t i = 0; i < a.size(0); ++i)
    for (int64_t j = 0; j < b.size(1); ++j) {
      double s = 0;
      for (int64_t k = 0; k < a.size(1); ++k) s += a.at<float>({i, k}) * b.at<float>({k, j});
      out.select(0, i).select(0, j).fill_(s);
    }
  return out;
}
}  // namespace

TEST_CASE("binary ops broadcast size-1 dims, 0-dim scalars and 0-size dims") {
  Tensor a = ember::arange(0.0, 6.0, 1.0, {.dtype = ember::kFloat32}).reshape({2, 3});
  Tensor row = ember::tensor({10.f, 20.f, 30.f});
  Tensor col = ember::tensor({1.f, 2.f}).reshape({2, 1});
  CHECK(ember::add(a, row).at<float>({1, 2}) == 35);
  CHECK(ember::mul(a, col).at<float>({1, 1}) == 8);
  CHECK(ember::sub(a, ember::full({}, 1.0)).at<float>({0, 0}) == -1);
  CHECK(ember::div(a, 2.0).at<float>({1, 1}) == 2);
  CHECK(ember::add(ember::zeros({0, 3}), row).sizes() == ember::Shape{0, 3});
  CHECK(ember::add(a.t(), col.t()).at<float>({2, 1}) == 7);  // strided inputs
  REQUIRE_THROWS_WITH(ember::add(ember::zeros({64, 10}), ember::zeros({32})),
                      "add: shapes [64, 10] and [32] cannot be broadcast");
}

TEST_CASE("dtypes promote as in PyTorch") {
  Tensor i = ember::arange(3);
  CHECK(ember::add(i, ember::ones({3})).dtype() == ember::kFloat32);
  CHECK(ember::add(i, 2.5).dtype() == ember::kFloat32);
  CHECK(ember::add(i, 2.0).dtype() == ember::kInt64);
  CHECK(ember::div(i, 2.0).dtype() == ember::kFloat32);
  CHECK(ember::add(ember::ones({1}), ember::ones({1}, {.dtype = ember::kFloat64})).dtype() == ember::kFloat64);
}

TEST_CASE("unary ops, comparisons and where compute element by element") {
  Tensor x = ember::tensor({-2.f, 0.5f, 4.f});
  CHECK(ember::neg(x).at<float>({0}) == 2);
  CHECK(ember::abs(x).at<float>({0}) == 2);
  CHECK(ember::sqrt(ember::abs(x)).at<float>({2}) == 2);
  CHECK(ember::exp(ember::log(ember::abs(x))).at<float>({1}) == Approx(0.5));
  CHECK(ember::pow(x, 2.0).at<float>({0}) == 4);
  CHECK(ember::gt(x, 0.0).dtype() == ember::kBool);
  CHECK(ember::eq(x, x).sum().item<int64_t>() == 3);
  CHECK(ember::where(ember::gt(x, 0.0), x, ember::zeros({})).at<float>({0}) == 0);
  CHECK(ember::maximum(x, ember::zeros({})).at<float>({0}) == 0);
  REQUIRE_THROWS_WITH(ember::where(x, x, x), Catch::Contains("where: condition must be a bool or uint8 tensor, got float32"));
}

TEST_CASE("reductions over dims keep or drop them, and max returns values and indices") {
  Tensor a = ember::tensor({1.f, 5.f, 3.f, 4.f, 2.f, 6.f}).reshape({2, 3});
  CHECK(ember::sum(a).item<float>() == 21);
  CHECK(ember::sum(a, {1}).sizes() == ember::Shape{2});
  CHECK(ember::sum(a, {0}, true).sizes() == ember::Shape{1, 3});
  CHECK(ember::sum(a, {-1}).at<float>({1}) == 12);
  CHECK(ember::mean(a, {0}).at<float>({2}) == Approx(4.5));
  auto [values, indices] = ember::max(a, 1);
  CHECK(values.at<float>({0}) == 5);
  CHECK(indices.at<int64_t>({1}) == 2);
  CHECK(ember::argmax(a.t(), 0).at<int64_t>({0}) == 1);  // strided input
  CHECK(ember::argmin(a, 1, true).sizes() == ember::Shape{2, 1});
  CHECK(ember::min(a).item<float>() == 1);
  CHECK(ember::sum(ember::arange(4)).dtype() == ember::kInt64);
  REQUIRE_THROWS_WITH(ember::sum(a, {2}), Catch::Contains("sum: dim 2 is out of range for a tensor with 2 dims"));
  REQUIRE_THROWS_WITH(ember::mean(ember::arange(3)), Catch::Contains("mean: expected a floating-point tensor, got int64"));
}

TEST_CASE("matmul matches the naive product for 1-D, 2-D, batched and transposed operands") {
  ember::manual_seed(1);
  Tensor a = ember::randn({7, 5}), b = ember::randn({5, 3});
  CHECK(ember::allclose(ember::matmul(a, b), naive_matmul(a, b).to(ember::kFloat32), 1e-5, 1e-5));
  Tensor at = ember::randn({5, 7}).t();
  CHECK(ember::allclose(ember::matmul(at, b), naive_matmul(at, b).to(ember::kFloat32), 1e-5, 1e-5));
  Tensor batch = ember::randn({4, 7, 5});
  Tensor out = ember::matmul(batch, b);
  CHECK(out.sizes() == ember::Shape{4, 7, 3});
  CHECK(ember::allclose(out[2], ember::matmul(batch[2], b), 1e-5, 1e-5));
  CHECK(ember::matmul(batch, ember::randn({4, 5, 2})).sizes() == ember::Shape{4, 7, 2});
  CHECK(ember::matmul(ember::ones({5}), ember::ones({5})).item<float>() == 5);
  CHECK(ember::matmul(a, ember::ones({5})).sizes() == ember::Shape{7});
  REQUIRE_THROWS_WITH(ember::matmul(a, a), Catch::Contains("matmul: shapes [7, 5] and [7, 5] cannot be multiplied"));
}
