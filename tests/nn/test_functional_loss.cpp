// mse_loss's fused kernel against its definition in core's ops (mean / sum of (x - t)^2), with
// mixed dtypes promoted as core's sub promotes them, and the gradient of a target that needs none.
#include <catch2/catch.hpp>

#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"

namespace F = ember::nn::functional;
using ember::Tensor;

TEST_CASE("mse_loss equals the mean, sum or elements of (input - target)^2, gradients 2 (x - t) g") {
  ember::manual_seed(12);
  Tensor x = ember::randn({5, 7}).requires_grad_(), t = ember::randn({5, 7}).requires_grad_();
  Tensor sq = ember::mul(ember::sub(x.detach(), t.detach()), ember::sub(x.detach(), t.detach()));
  CHECK(ember::allclose(F::mse_loss(x, t), ember::mean(sq), 1e-6, 1e-7));
  CHECK(ember::allclose(F::mse_loss(x, t, F::Reduction::Sum), ember::sum(sq), 1e-6, 1e-6));
  CHECK(ember::allclose(F::mse_loss(x, t, F::Reduction::None), sq, 0.0, 0.0));
  F::mse_loss(x, t).backward();
  Tensor want = ember::mul(ember::sub(x.detach(), t.detach()), 2.0 / 35.0);
  CHECK(ember::allclose(x.grad(), want, 1e-6, 1e-7));
  CHECK(ember::allclose(t.grad(), ember::neg(want), 1e-6, 1e-7));
}

TEST_CASE("mse_loss promotes a float32 input and a float64 target to float64, and leaves a fixed target alone") {
  ember::manual_seed(13);
  Tensor x = ember::randn({4, 3}).requires_grad_();
  Tensor t = ember::randn({4, 3}, {.dtype = ember::kFloat64});
  Tensor loss = F::mse_loss(x, t, F::Reduction::Sum);
  CHECK(loss.dtype() == ember::kFloat64);
  Tensor d = ember::sub(x.detach().to(ember::kFloat64), t);
  CHECK(ember::allclose(loss, ember::sum(ember::mul(d, d)), 1e-12, 0.0));
  loss.backward();
  REQUIRE(x.grad().dtype() == ember::kFloat32);
  CHECK(ember::allclose(x.grad(), ember::mul(d, 2.0).to(ember::kFloat32), 1e-6, 1e-7));
  CHECK_FALSE(t.grad().defined());
}

TEST_CASE("mse_loss names the op and both shapes when they differ") {
  REQUIRE_THROWS_WITH(F::mse_loss(ember::zeros({2, 3}), ember::zeros({3, 2})),
                      Catch::Contains("mse_loss: input [2, 3] and target [3, 2] must have the same shape"));
}
