// The two references every op test checks against: PyTorch's values, read from a safetensors
// fixture (written by tests/gen_*_fixtures.py) and compared in the max norm, and float64 central
// finite differences, which autograd's gradients must match.
// defines: fixture_path, fixture, require_close, leaf, GradcheckOptions, check_gradients, check_gradient
//
// Needs EMBER_FIXTURE_DIR, which tests/CMakeLists.txt defines for every CPU test executable. The
// helpers are inline: a test that reads no fixture (tests/core) never calls into ember_nn.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"
#include "ember/nn/checkpoint.h"

namespace ember::test {

// The path of tests/fixtures/<file>.safetensors; `file` carries the generator's prefix
// ("loss_mse_mean", "pool_pool1").
inline std::string fixture_path(const std::string& file) {
  return std::string(EMBER_FIXTURE_DIR) + "/" + file + ".safetensors";
}

// Every tensor of tests/fixtures/<file>.safetensors, by name.
inline std::map<std::string, Tensor> fixture(const std::string& file) {
  return nn::read_safetensors(fixture_path(file));
}

// Requires `actual` defined and of `expected`'s shape, then checks one relative error over the
// whole tensor, max |actual - expected| / max(max |expected|, 1e-6), against `tol`. A NaN
// difference counts as the worst; a failure reports the worst element and both values there.
inline void require_close(const Tensor& actual, const Tensor& expected, const std::string& what,
                          double tol = 1e-4) {
  INFO(what);
  REQUIRE(actual.defined());
  INFO("shapes " << shape_str(actual.sizes()) << " vs " << shape_str(expected.sizes()));
  REQUIRE(actual.sizes() == expected.sizes());
  Tensor a = actual.detach().to(kFloat64).contiguous(), b = expected.to(kFloat64).contiguous();
  double worst = 0, scale = 1e-6;
  int64_t worst_at = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    scale = std::max(scale, std::fabs(b.data<double>()[i]));
    const double diff = std::fabs(a.data<double>()[i] - b.data<double>()[i]);
    if (!(diff <= worst)) {  // true for a NaN too
      worst = std::isnan(diff) ? INFINITY : diff;
      worst_at = i;
    }
  }
  INFO("worst element " << worst_at << ": ember " << a.data<double>()[worst_at] << " vs PyTorch "
                        << b.data<double>()[worst_at] << ", relative error " << worst / scale);
  CHECK(worst / scale < tol);
}

// A fresh leaf copy of `t` (no shared storage, no history) that requires grad, optionally in
// another dtype.
inline Tensor leaf(const Tensor& t) { return t.detach().clone().requires_grad_(); }
inline Tensor leaf(const Tensor& t, DType dtype) { return leaf(t.detach().to(dtype)); }

struct GradcheckOptions {
  double eps = 1e-6;  // the central-difference step
  double tol = 1e-5;  // the largest |numeric - autograd| / max(1, |numeric|) allowed
};

// Compares autograd's gradient of sum(fn(inputs) * weights), random float64 weights, with central
// differences for every element of every input. The inputs are taken in float64; one already in
// float64 is used as given, so a non-contiguous view stays one (the shifted copies are
// contiguous). Reports the worst element of each input on failure; a NaN error is the worst.
inline void check_gradients(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                            std::vector<Tensor> inputs, GradcheckOptions options = {}) {
  const double eps = options.eps;
  for (Tensor& t : inputs) t = t.detach().to(kFloat64).requires_grad_();
  Tensor out = fn(inputs);
  Tensor weights = randn(out.sizes(), {.dtype = kFloat64});
  sum(mul(out, weights)).backward();
  NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor analytic = inputs[k].grad();
    REQUIRE(analytic.defined());
    REQUIRE(analytic.sizes() == inputs[k].sizes());
    Tensor analytic_flat = analytic.contiguous().reshape({-1});
    Tensor base = inputs[k].detach(), flat = base.contiguous().reshape({-1});
    double worst = 0, worst_numeric = 0, worst_analytic = 0;
    int64_t worst_at = -1;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      std::vector<Tensor> shifted = inputs;
      auto value_at = [&](double delta) {
        Tensor moved = flat.clone();
        moved.data<double>()[i] += delta;
        shifted[k] = moved.reshape(base.sizes());
        return sum(mul(fn(shifted), weights)).item<double>();
      };
      const double numeric = (value_at(eps) - value_at(-eps)) / (2 * eps);
      const double a = analytic_flat.data<double>()[i];
      const double err = std::fabs(numeric - a) / std::max(1.0, std::fabs(numeric));
      if (!(err <= worst)) {  // true for a NaN too
        worst = std::isnan(err) ? INFINITY : err;
        worst_at = i;
        worst_numeric = numeric;
        worst_analytic = a;
      }
    }
    INFO(what << ", input " << k << " element " << worst_at << ": numeric " << worst_numeric << " vs autograd "
              << worst_analytic << ", relative error " << worst);
    CHECK(worst < options.tol);
  }
}

// check_gradients for an op of one input.
inline void check_gradient(const std::string& what, const std::function<Tensor(const Tensor&)>& fn,
                           const Tensor& input, GradcheckOptions options = {}) {
  check_gradients(what, [&fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {input}, options);
}

}  // namespace ember::test
