// clip_grad_norm_ and clip_grad_value_ against torch.nn.utils (tests/gen_optim_fixtures.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/clip_grad.h"

using ember::Tensor;
namespace utils = ember::nn::utils;

namespace {

std::vector<Tensor> params_with_grads(const std::map<std::string, Tensor>& f) {
  std::vector<Tensor> params;
  for (int k = 0; k < 3; ++k) {
    const Tensor g = f.at("grad" + std::to_string(k));
    Tensor p = ember::zeros(g.sizes(), {.dtype = g.dtype()}).requires_grad_();
    p.set_grad(g.clone());
    params.push_back(p);
  }
  return params;
}

}  // namespace

TEST_CASE("clip_grad_norm_ returns PyTorch's total norm and scales as PyTorch does, for norms 1, 2, 3 and inf") {
  const auto f = ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/clip_grad.safetensors");
  const std::pair<double, double> cases[] = {{1.0, 2.0}, {100.0, 2.0}, {0.5, 1.0},
                                             {0.3, std::numeric_limits<double>::infinity()}, {2.0, 3.0}};
  for (int c = 0; c < 5; ++c) {
    auto params = params_with_grads(f);
    const auto [max_norm, norm_type] = cases[c];
    const double total = utils::clip_grad_norm_(params, max_norm, norm_type);
    const std::string prefix = "case" + std::to_string(c) + ".";
    INFO("max_norm " << max_norm << ", norm_type " << norm_type);
    CHECK(total == Approx(f.at(prefix + "total").item<double>()).epsilon(1e-13));
    for (int k = 0; k < 3; ++k) {
      CHECK(ember::allclose(params[k].grad(), f.at(prefix + "grad" + std::to_string(k)), 1e-13, 1e-15));
    }
  }
}

TEST_CASE("clip_grad_value_ clamps like PyTorch; bad arguments and non-finite norms are named errors") {
  const auto f = ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/clip_grad.safetensors");
  auto params = params_with_grads(f);
  utils::clip_grad_value_(params, 0.7);
  for (int k = 0; k < 3; ++k) CHECK(ember::allclose(params[k].grad(), f.at("value.grad" + std::to_string(k)), 0, 0));

  REQUIRE_THROWS_WITH(utils::clip_grad_norm_(params, 1.0, 0.0), Catch::Contains("clip_grad_norm_: norm_type must be > 0"));
  REQUIRE_THROWS_WITH(utils::clip_grad_value_(params, -1.0), Catch::Contains("clip_grad_value_: clip_value must be >= 0"));
  Tensor p = ember::zeros({2}).requires_grad_();
  p.set_grad(ember::tensor(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()}));
  REQUIRE_THROWS_WITH(utils::clip_grad_norm_({p}, 1.0, 2.0, true),
                      Catch::Contains("clip_grad_norm_: the total norm of order 2 of the gradients is inf"));
  CHECK(p.grad()[0].item<float>() == 1.0f);  // left alone
  Tensor none = ember::zeros({2}).requires_grad_();
  CHECK(utils::clip_grad_norm_({none}, 1.0) == 0.0);  // no gradient: nothing to clip
}
