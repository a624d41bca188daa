// sigmoid, tanh, gelu, silu, leaky_relu, elu and hardswish (functional, modules) and the tensor ops
// ember::erf / tanh / sigmoid: against PyTorch's values (tests/gen_activation_fixtures.py), float64
// finite-difference gradients over odd, batch-1 and non-contiguous shapes, and the error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/activation.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

namespace {

using Op = std::function<Tensor(const Tensor&)>;

// Smooth element-wise ops: their finite differences are held to 1e-6, tighter than the default.
const GradcheckOptions kTight{.tol = 1e-6};

// Forward and input gradient of `op` against the fixture `name`, in float32 and (from the same
// float32 inputs, against the float32 reference) float64.
void check_fixture(const std::string& name, const Op& op) {
  auto f = fixture("activation_" + name);
  for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
    const std::string what = name + (dtype == ember::kFloat32 ? " f32" : " f64");
    Tensor x = f.at("x").to(dtype).detach().requires_grad_();
    Tensor y = op(x);
    require_close(y, f.at("y"), what + " forward");
    y.backward(f.at("dy").to(dtype));
    require_close(x.grad(), f.at("dx"), what + " input gradient");
  }
}

struct Named {
  std::string name;
  Op op;
};

// Every activation, with default and non-default parameters.
std::vector<Named> all_activations() {
  return {{"sigmoid", [](const Tensor& t) { return F::sigmoid(t); }},
          {"tanh", [](const Tensor& t) { return F::tanh(t); }},
          {"gelu", [](const Tensor& t) { return F::gelu(t); }},
          {"gelu_tanh", [](const Tensor& t) { return F::gelu(t, {.approximate = "tanh"}); }},
          {"silu", [](const Tensor& t) { return F::silu(t); }},
          {"leaky_relu", [](const Tensor& t) { return F::leaky_relu(t); }},
          {"leaky_relu_slope0.2", [](const Tensor& t) { return F::leaky_relu(t, 0.2); }},
          {"elu", [](const Tensor& t) { return F::elu(t); }},
          {"elu_alpha0.5", [](const Tensor& t) { return F::elu(t, 0.5); }},
          {"hardswish", [](const Tensor& t) { return F::hardswish(t); }}};
}

}  // namespace

TEST_CASE("activations match PyTorch's outputs and gradients, large |x| and kinks included", "[activation]") {
  for (const Named& a : all_activations()) check_fixture(a.name, a.op);
}

TEST_CASE("tensor ops erf, tanh and sigmoid match PyTorch", "[activation]") {
  check_fixture("erf", [](const Tensor& t) { return ember::erf(t); });
  check_fixture("tanh", [](const Tensor& t) { return ember::tanh(t); });
  check_fixture("sigmoid", [](const Tensor& t) { return ember::sigmoid(t); });
}

TEST_CASE("activation modules compute their functional op, and print as PyTorch's", "[activation]") {
  ember::manual_seed(1);
  Tensor x = ember::randn({3, 4});
  auto same = [&](ember::nn::Module& m, const Tensor& want) {
    CHECK(ember::max(ember::sub(m.forward(x), want).abs()).item<float>() == 0.0f);
  };
  ember::nn::Sigmoid sigmoid;
  ember::nn::Tanh tanh;
  ember::nn::GELU gelu, gelu_tanh({.approximate = "tanh"});
  ember::nn::SiLU silu;
  ember::nn::LeakyReLU leaky, leaky2(0.2);
  ember::nn::ELU elu, elu2(0.5);
  ember::nn::Hardswish hardswish;
  same(sigmoid, F::sigmoid(x));
  same(tanh, F::tanh(x));
  same(gelu, F::gelu(x));
  same(gelu_tanh, F::gelu(x, {.approximate = "tanh"}));
  same(silu, F::silu(x));
  same(leaky, F::leaky_relu(x, 0.01));
  same(leaky2, F::leaky_relu(x, 0.2));
  same(elu, F::elu(x, 1.0));
  same(elu2, F::elu(x, 0.5));
  same(hardswish, F::hardswish(x));
  CHECK(gelu.extra_repr() == "approximate='none'");
  CHECK(gelu_tanh.extra_repr() == "approximate='tanh'");
  CHECK(leaky.extra_repr() == "negative_slope=0.01");
  CHECK(leaky2.extra_repr() == "negative_slope=0.2");
  CHECK(elu.extra_repr() == "alpha=1.0");
  CHECK(elu2.extra_repr() == "alpha=0.5");
  CHECK(sigmoid.extra_repr().empty());
  CHECK(hardswish.extra_repr().empty());
}

TEST_CASE("activation gradients match finite differences: odd sizes, batch 1, non-contiguous", "[activation]") {
  ember::manual_seed(23);
  const std::vector<ember::Shape> shapes{{1}, {7}, {1, 3, 5}, {2, 3, 5, 3}};
  for (const Named& a : all_activations()) {
    for (const ember::Shape& shape : shapes) {
      check_gradient(a.name + " " + ember::shape_str(shape), a.op, ember::mul(ember::randn(shape), 2.5), kTight);
    }
    // Non-contiguous: a transposed view and a strided slice.
    const Op op = a.op;
    check_gradient(a.name + " transposed [5,3]", [op](const Tensor& t) { return op(t.t()); },
                   ember::mul(ember::randn({5, 3}), 2.5), kTight);
    check_gradient(a.name + " narrowed [4,9]", [op](const Tensor& t) { return op(t.narrow(1, 2, 5)); },
                   ember::mul(ember::randn({4, 9}), 2.5), kTight);
  }
  for (const Named& t : std::vector<Named>{{"erf", [](const Tensor& v) { return ember::erf(v); }},
                                           {"tanh op", [](const Tensor& v) { return ember::tanh(v); }},
                                           {"sigmoid op", [](const Tensor& v) { return ember::sigmoid(v); }}}) {
    const Op op = t.op;
    check_gradient(t.name + " [2,3,5]", op, ember::mul(ember::randn({2, 3, 5}), 2.0), kTight);
    check_gradient(t.name + " transposed [5,3]", [op](const Tensor& v) { return op(v.t()); },
                   ember::mul(ember::randn({5, 3}), 2.0), kTight);
  }
}

TEST_CASE("activations on non-contiguous inputs equal those on contiguous copies", "[activation]") {
  ember::manual_seed(4);
  Tensor x = ember::mul(ember::randn({6, 10}), 3.0);
  for (const Named& a : all_activations()) {
    Tensor strided = a.op(x.t()), dense = a.op(x.t().contiguous());
    INFO(a.name);
    CHECK(ember::max(ember::sub(strided, dense).abs()).item<float>() == 0.0f);
  }
  CHECK(ember::max(ember::sub(ember::tanh(x.t()), ember::tanh(x.t().contiguous())).abs()).item<float>() == 0.0f);
}

TEST_CASE("activations reject bad arguments with clear messages", "[activation]") {
  Tensor ints = ember::zeros({3}, {.dtype = ember::kInt64});
  Tensor x = ember::randn({3});
  CHECK_THROWS_WITH(F::sigmoid(ints), Catch::Contains("sigmoid: input must be float32 or float64, got int64"));
  CHECK_THROWS_WITH(F::hardswish(ints), Catch::Contains("hardswish: input must be float32 or float64, got int64"));
  CHECK_THROWS_WITH(F::elu(Tensor()), Catch::Contains("elu: input is an undefined tensor"));
  CHECK_THROWS_WITH(F::gelu(x, {.approximate = "exact"}),
                    Catch::Contains("gelu: approximate must be \"none\" or \"tanh\", got \"exact\""));
  CHECK_THROWS_WITH(ember::nn::GELU({.approximate = "fast"}),
                    Catch::Contains("GELU: approximate must be \"none\" or \"tanh\", got \"fast\""));
  CHECK_THROWS_WITH(F::leaky_relu(x, std::numeric_limits<double>::quiet_NaN()),
                    Catch::Contains("leaky_relu: expected a finite negative_slope, got nan"));
  CHECK_THROWS_WITH(F::elu(x, INFINITY), Catch::Contains("elu: expected a finite alpha, got inf"));
}
