// clamp (scalar and tensor bounds), var, std, masked_fill and dropout2d: PyTorch's values and gradients
// (tests/gen_tensor_ops_fixtures.py), finite differences in float64, and their error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/dropout.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;
using Catch::Matchers::Contains;

namespace {

// y = op(x) against tensor_ops_<name>: the output, and dx after backward of sum(y * dy).
void check_unary_fixture(const std::string& name, const std::function<Tensor(const Tensor&)>& op,
                         double tol = 1e-6) {
  auto f = fixture("tensor_ops_" + name);
  Tensor x = leaf(f.at("x"));
  Tensor y = op(x);
  CHECK(y.dtype() == f.at("y").dtype());
  require_close(y, f.at("y"), name + ": output", tol);
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + ": gradient", tol);
}

}  // namespace

TEST_CASE("clamp matches PyTorch, values on a bound passing their gradient") {
  check_unary_fixture("clamp_both", [](const Tensor& x) { return ember::clamp(x, -1.0, 1.5); });
  check_unary_fixture("clamp_min", [](const Tensor& x) { return ember::clamp_min(x, 0.25); });
  check_unary_fixture("clamp_max", [](const Tensor& x) { return x.clamp(std::nullopt, -0.5); });
  check_unary_fixture("clamp_inverted", [](const Tensor& x) { return ember::clamp(x, 1.0, -1.0); });
  check_unary_fixture("clamp_f64", [](const Tensor& x) { return x.clamp(-0.3, 0.4); });
}

TEST_CASE("clamp with tensor bounds matches PyTorch: broadcast bounds, ties, max below min, one bound alone") {
  {
    auto f = fixture("tensor_ops_clamp_tensors");
    Tensor x = leaf(f.at("x")), lo = leaf(f.at("lo")), hi = leaf(f.at("hi"));
    Tensor y = ember::clamp(x, lo, hi);
    require_close(y, f.at("y"), "clamp tensors: output", 1e-7);
    y.backward(f.at("dy"));
    require_close(x.grad(), f.at("dx"), "clamp tensors: gradient of x", 1e-7);
    require_close(lo.grad(), f.at("dlo"), "clamp tensors: gradient of min", 1e-6);
    require_close(hi.grad(), f.at("dhi"), "clamp tensors: gradient of max", 1e-6);
  }
  auto f = fixture("tensor_ops_clamp_tensor_max");
  Tensor x = leaf(f.at("x")), hi = leaf(f.at("hi"));
  Tensor y = x.clamp(Tensor(), hi);
  require_close(y, f.at("y"), "clamp max tensor: output", 1e-7);
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), "clamp max tensor: gradient of x", 1e-7);
  require_close(hi.grad(), f.at("dhi"), "clamp max tensor: gradient of max", 1e-6);
}

TEST_CASE("var and std match PyTorch over batch statistics, rows and every element") {
  check_unary_fixture("var_nhw", [](const Tensor& x) { return ember::var(x, {0, 2, 3}); }, 1e-5);
  check_unary_fixture("var_nhw_biased_keepdim", [](const Tensor& x) { return x.var({0, 2, 3}, false, true); }, 1e-5);
  check_unary_fixture("std_rows", [](const Tensor& x) { return ember::std(x, {-1}); }, 1e-5);
  check_unary_fixture("std_rows_biased_keepdim", [](const Tensor& x) { return x.std({1}, false, true); }, 1e-5);
  check_unary_fixture("var_all", [](const Tensor& x) { return x.var(); }, 1e-5);
  check_unary_fixture("std_all_f64", [](const Tensor& x) { return ember::std(x); }, 1e-12);
}

TEST_CASE("masked_fill matches PyTorch for a broadcast causal mask and a fill value with a gradient") {
  {
    auto f = fixture("tensor_ops_masked_fill_causal");
    Tensor x = leaf(f.at("x"));
    Tensor y = ember::masked_fill(x, f.at("mask").to(ember::kBool), -1e4);
    require_close(y, f.at("y"), "causal: output", 1e-7);
    y.backward(f.at("dy"));
    require_close(x.grad(), f.at("dx"), "causal: gradient", 1e-7);
  }
  auto f = fixture("tensor_ops_masked_fill_tensor_value");
  Tensor x = leaf(f.at("x")), v = leaf(f.at("v"));
  Tensor y = ember::masked_fill(x, f.at("mask").to(ember::kBool), v);
  require_close(y, f.at("y"), "tensor value: output", 1e-7);
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), "tensor value: gradient of x", 1e-7);
  require_close(v.grad(), f.at("dv"), "tensor value: gradient of the value", 1e-6);
}

TEST_CASE("clamp, var, std and masked_fill gradients match finite differences, non-contiguous inputs too") {
  ember::manual_seed(31);
  // Values kept away from the bounds, where clamp is not differentiable.
  Tensor away = ember::add(ember::mul(ember::randn({5, 7}), 0.2), ember::mul(ember::gt(ember::randn({5, 7}), 0.0).to(ember::kFloat32), 1.0));
  check_gradient("clamp [-0.5, 0.5]", [](const Tensor& x) { return ember::clamp(x, -0.5, 0.5); }, away);
  check_gradient("clamp min", [](const Tensor& x) { return ember::clamp_min(x, 0.5); }, away);
  check_gradient("clamp max, transposed", [](const Tensor& x) { return ember::clamp_max(x.t(), 0.5); }, away);
  check_gradients("clamp with tensor bounds", [](const std::vector<Tensor>& in) {
    return ember::clamp(in[0], in[1], in[2]);
  }, {ember::mul(ember::randn({4, 6}), 2.0), ember::sub(ember::rand({6}), 1.0), ember::add(ember::rand({4, 1}), 0.5)});
  for (const ember::Shape& dims : {ember::Shape{}, ember::Shape{0}, ember::Shape{1, 3}, ember::Shape{-1}}) {
    Tensor x = ember::randn({3, 4, 1, 5});
    check_gradient("var dims " + ember::shape_str(dims), [&](const Tensor& t) { return ember::var(t, dims); }, x);
    check_gradient("std biased keepdim dims " + ember::shape_str(dims),
                   [&](const Tensor& t) { return ember::std(t, dims, false, true); }, x);
  }
  check_gradient("var of a transposed view", [](const Tensor& x) { return ember::var(x.transpose(0, 1), {1}); },
                 ember::randn({6, 5}));
  check_gradient("std, batch of one", [](const Tensor& x) { return ember::std(x, {1}); }, ember::randn({1, 9}));
  Tensor mask = ember::gt(ember::randn({4, 1, 3}), 0.0);
  check_gradients("masked_fill broadcast mask, tensor value", [&](const std::vector<Tensor>& in) {
    return ember::masked_fill(in[0], mask, in[1]);
  }, {ember::randn({4, 5, 3}), ember::randn({})});
}

TEST_CASE("clamp keeps NaN and integer dtypes, and computes fractional bounds of integers in float32") {
  Tensor x = ember::tensor<float>({-3.0f, NAN, 0.5f, 7.0f});
  Tensor y = ember::clamp(x, -1.0, 2.0);
  CHECK(y.data<float>()[0] == -1.0f);
  CHECK(std::isnan(y.data<float>()[1]));
  CHECK(y.data<float>()[2] == 0.5f);
  CHECK(y.data<float>()[3] == 2.0f);
  Tensor ints = ember::arange(-4.0, 5.0, 1.0, {.dtype = ember::kInt64});
  Tensor clamped = ember::clamp(ints, -2.0, 3.0);
  CHECK(clamped.dtype() == ember::kInt64);
  CHECK(clamped.data<int64_t>()[0] == -2);
  CHECK(clamped.data<int64_t>()[8] == 3);
  Tensor fractional = ember::clamp(ints, 0.5, std::nullopt);
  CHECK(fractional.dtype() == ember::kFloat32);
  CHECK(fractional.data<float>()[0] == 0.5f);
}

TEST_CASE("var of one element is NaN unbiased and 0 biased, as in PyTorch") {
  Tensor x = ember::tensor<float>({2.5f});
  CHECK(std::isnan(ember::var(x).item<float>()));
  CHECK(ember::var(x, {}, false).item<float>() == 0.0f);
}

TEST_CASE("clamp, var, std and masked_fill reject bad arguments with messages naming the op") {
  Tensor x = ember::randn({2, 3});
  CHECK_THROWS_WITH(ember::clamp(x, std::nullopt, std::nullopt),
                    Contains("clamp: at least one of 'min' or 'max' must be given"));
  CHECK_THROWS_WITH(ember::clamp(ember::gt(x, 0.0), 0.0, 1.0), Contains("clamp: bool tensors cannot be clamped"));
  CHECK_THROWS_WITH(ember::clamp(x, Tensor(), Tensor()), Contains("clamp: at least one of 'min' or 'max' must be given"));
  CHECK_THROWS_WITH(ember::clamp(x, ember::zeros({4}), Tensor()), Contains("shapes [2, 3] and [4] cannot be broadcast"));
  CHECK_THROWS_WITH(ember::var(ember::arange(3.0, {.dtype = ember::kInt64})),
                    Contains("var: expected a floating-point tensor, got int64"));
  CHECK_THROWS_WITH(ember::std(x, {2}), Contains("var: dim 2 is out of range"));
  CHECK_THROWS_WITH(ember::var(x, {1, -1}), Contains("var: dim repeated"));
  CHECK_THROWS_WITH(ember::masked_fill(x, ember::gt(x, 0.0).to(ember::kUInt8), 1.0),
                    Contains("masked_fill: expected a bool mask, got uint8"));
  CHECK_THROWS_WITH(ember::masked_fill(x, ember::gt(ember::ones({4, 3}), 0.0), 1.0),
                    Contains("masked_fill: shapes [2, 3] and [4, 3] cannot be broadcast"));
  CHECK_THROWS_WITH(ember::masked_fill(x, ember::gt(ember::ones({2, 2, 3}), 0.0), 1.0),
                    Contains("masked_fill: mask of shape [2, 2, 3] does not broadcast to the input's shape [2, 3]"));
  CHECK_THROWS_WITH(ember::masked_fill(x, ember::gt(x, 0.0), ember::ones({1})),
                    Contains("masked_fill: expected a 0-dim value tensor, got 1-D value of shape [1]"));
}

TEST_CASE("dropout2d drops whole channels with probability p, scales the rest, and masks the gradient alike") {
  ember::manual_seed(5);
  const double p = 0.3;
  Tensor x = ember::add(ember::rand({16, 32, 3, 4}), 1.0).requires_grad_();  // no zeros of its own
  Tensor y = F::dropout2d(x, p, true);
  Tensor ratio = ember::div(y.detach(), x.detach());
  int64_t dropped = 0;
  for (int64_t n = 0; n < 16; ++n) {
    for (int64_t c = 0; c < 32; ++c) {
      Tensor plane = ratio.select(0, n).select(0, c);
      const double first = plane.reshape({-1}).data<float>()[0];
      CHECK((first == 0.0 || std::fabs(first - 1.0 / (1.0 - p)) < 1e-6));
      CHECK(ember::allclose(plane, ember::full({3, 4}, first), 1e-6, 1e-6));  // the whole plane alike
      dropped += first == 0.0;
    }
  }
  CHECK(std::fabs(static_cast<double>(dropped) / 512.0 - p) < 0.07);  // 512 Bernoulli(0.3): sd 0.02
  y.sum().backward();
  CHECK(ember::allclose(x.grad(), ratio, 1e-6, 1e-6));
  Tensor unbatched = ember::randn({5, 3, 3});
  CHECK(F::dropout2d(unbatched, 0.5, true).sizes() == unbatched.sizes());
  CHECK(F::dropout2d(x, p, false).data_ptr() == x.data_ptr());  // the input itself
}

TEST_CASE("Dropout2d is the identity in eval() and rejects bad input") {
  ember::nn::Dropout2d drop(0.4);
  Tensor x = ember::randn({2, 3, 4, 4});
  drop.eval();
  CHECK(ember::allclose(drop.forward(x), x, 0.0, 0.0));
  CHECK(drop.extra_repr() == "p=0.4, inplace=False");
  CHECK_THROWS_WITH(ember::nn::Dropout2d(1.5), Contains("Dropout2d: probability must be in [0, 1], got 1.5"));
  CHECK_THROWS_WITH(F::dropout2d(ember::randn({64, 784})),
                    Contains("dropout2d: expected input [N, C, H, W] or [C, H, W], got 2-D input [64, 784]"));
}
