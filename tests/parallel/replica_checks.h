// What the DataParallel tests share (CPU replicas in tests/parallel, GPUs in tests/cuda/test_nccl):
// the error measure, the labels, the loss, and the check that a model's parameters match a
// reference's.
// defines: replica_checks::relative_error, cycle_labels, cross_entropy_loss,
//          check_parameters_match
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace replica_checks {

// max |a - b| / max(max |b|, 1e-12), in float64 on the CPU; the shapes must match (REQUIRE), and
// a NaN gives infinity.
inline double relative_error(const ember::Tensor& a, const ember::Tensor& b) {
  ember::Tensor x = a.detach().cpu().to(ember::kFloat64).contiguous();
  ember::Tensor y = b.detach().cpu().to(ember::kFloat64).contiguous();
  REQUIRE(x.sizes() == y.sizes());
  double worst = 0, scale = 1e-12;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double d = std::abs(x.data<double>()[i] - y.data<double>()[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
    scale = std::max(scale, std::abs(y.data<double>()[i]));
  }
  return worst / scale;
}

// Labels (i * 7 + 3) % classes for i < n (int64).
inline ember::Tensor cycle_labels(int64_t n, int64_t classes) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < n; ++i) values.push_back((i * 7 + 3) % classes);
  return ember::tensor(values);
}

inline ember::Tensor cross_entropy_loss(const ember::Tensor& out, const ember::Tensor& target) {
  return ember::nn::functional::cross_entropy(out, target);
}

// Every parameter of `got` is within `tol` (relative_error) of the same-named one of `expected`.
inline void check_parameters_match(const ember::nn::Module& got, const ember::nn::Module& expected,
                                   double tol, const std::string& what) {
  auto mine = got.named_parameters(), theirs = expected.named_parameters();
  REQUIRE(mine.size() == theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    INFO(what << " " << mine[i].first);
    CHECK(relative_error(mine[i].second, theirs[i].second) < tol);
  }
}

}  // namespace replica_checks
