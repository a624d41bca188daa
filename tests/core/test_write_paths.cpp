// Core's own write paths: Tensor::set_data (what Module::to does) and Tensor::mutable_data (the
// one way code outside an op writes a tensor's elements), with the autograd bookkeeping each owes.
#include <catch2/catch.hpp>

#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

using ember::Tensor;

TEST_CASE("mutable_data bumps the version, so a tensor saved for backward refuses to unpack") {
  Tensor w = ember::tensor<float>({1, 2, 3}).requires_grad_();
  Tensor x = ember::tensor<float>({4, 5, 6});
  Tensor y = ember::sum(ember::mul(w, x));  // saves x
  {
    ember::NoGradGuard no_grad;
    float* p = x.mutable_data<float>("test writer");
    p[0] = 40;
  }
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("was modified in place"));
}

TEST_CASE("mutable_data refuses a leaf that requires grad while grad mode is on, naming the writer") {
  Tensor w = ember::tensor<float>({1, 2, 3}).requires_grad_();
  REQUIRE_THROWS_WITH(w.mutable_data<float>("SGD"), Catch::StartsWith("SGD: a leaf tensor that requires grad"));
  REQUIRE_THROWS_WITH(w.mutable_data<double>("SGD"), Catch::Contains("asked for float64"));
  ember::NoGradGuard no_grad;
  REQUIRE(w.mutable_data<float>("SGD") == w.data<float>());
}

TEST_CASE("set_data swaps the data under a handle and keeps its autograd identity") {
  Tensor w = ember::tensor<float>({1, 2, 3}).requires_grad_();
  ember::sum(ember::mul(w, 2.0)).backward();
  Tensor handle = w;  // what an optimizer holds
  w.set_data(ember::tensor<double>({7, 8, 9, 10}));
  CHECK(handle.dtype() == ember::kFloat64);
  CHECK(handle.sizes() == ember::Shape{4});
  CHECK(handle.at<double>({3}) == 10.0);
  CHECK(handle.requires_grad());
  CHECK(handle.is_leaf());
  CHECK(handle.grad().defined());
  REQUIRE_THROWS_WITH(w.set_data(ember::tensor<int64_t>({1})),
                      Catch::Contains("set_data: a tensor that requires grad must hold floating data, got int64"));
}
