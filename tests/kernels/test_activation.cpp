// relu forward and backward, element by element, on small and parallel-sized arrays.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ember/kernels/cpu/activation.h"

namespace cpu = ember::kernels::cpu;

TEMPLATE_TEST_CASE("relu keeps positives, zeroes negatives, and its backward masks by y > 0",
                   "[activation]", float, double) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000), int64_t(200003)}) {
    std::vector<TestType> x(n), y(n), dy(n), dx(n);
    for (auto& v : x) v = TestType(dist(rng));
    for (auto& v : dy) v = TestType(dist(rng));
    if (n > 2) x[1] = 0;
    cpu::relu_forward<TestType>(x.data(), y.data(), n);
    cpu::relu_backward<TestType>(dy.data(), y.data(), dx.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const TestType want_y = x[i] > 0 ? x[i] : TestType(0);
      const TestType want_dx = x[i] > 0 ? dy[i] : TestType(0);
      if (y[i] != want_y || dx[i] != want_dx) {
        CAPTURE(n, i, x[i], y[i], want_y, dy[i], dx[i], want_dx);
        FAIL("relu differs");
      }
    }
  }
}

TEMPLATE_TEST_CASE("relu propagates NaN and works in place", "[activation]", float, double) {
  const TestType nan = std::numeric_limits<TestType>::quiet_NaN();
  std::vector<TestType> x = {nan, -2, 3};
  cpu::relu_forward<TestType>(x.data(), x.data(), 3);
  CHECK(std::isnan(x[0]));
  CHECK(x[1] == 0);
  CHECK(x[2] == 3);
}
