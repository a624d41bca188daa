// kernels/cpu/vector_math.h against the C library's float64 results rounded to float, over the
// whole float range: large |x|, subnormal results, NaN and +-inf.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ember/kernels/cpu/vector_math.h"

namespace vmath = ember::kernels::cpu::vmath;

namespace {

// Distance in units in the last place between two finite floats of the same sign or zero.
double ulps(float a, float b) {
  if (a == b) return 0;
  const double spacing = std::max(std::nextafter(std::fabs(b), INFINITY) - std::fabs(b),
                                  std::numeric_limits<float>::denorm_min());
  return std::fabs(static_cast<double>(a) - static_cast<double>(b)) / spacing;
}

// Inputs: a dense sweep of [-range, range], random magnitudes across every exponent, and the
// special values.
std::vector<float> inputs(float range) {
  std::vector<float> xs;
  for (int i = -200000; i <= 200000; ++i) xs.push_back(range * static_cast<float>(i) / 200000.0f);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> exponent(-40.0f, 7.5f);
  for (int i = 0; i < 100000; ++i) {
    float v = std::exp2(exponent(rng));
    xs.push_back(i % 2 ? v : -v);
  }
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.73f, 89.0f, -87.3f, -103.0f, -103.9f, -104.5f, 1e30f,
                  -1e30f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()}) {
    xs.push_back(v);
  }
  return xs;
}

template <class Fast, class Exact>
void check_function(const char* name, Fast fast, Exact exact, float range, double max_ulps, double abs_floor) {
  double worst = 0;
  float worst_x = 0;
  for (float x : inputs(range)) {
    const float got = fast(x), want = static_cast<float>(exact(static_cast<double>(x)));
    if (std::isnan(want)) {
      INFO(name << "(" << x << ") = " << got << ", want NaN");
      REQUIRE(std::isnan(got));
      continue;
    }
    // Below abs_floor an absolute error of abs_floor * 2^-24 is allowed (erf's rational form).
    double err = ulps(got, want);
    if (std::fabs(want) < abs_floor) err = std::min(err, std::fabs(got - want) / (abs_floor * 0x1p-24));
    if (err > worst) {
      worst = err;
      worst_x = x;
    }
  }
  INFO(name << ": worst at x = " << worst_x << ": " << fast(worst_x) << " vs " << exact(worst_x) << ", " << worst
            << " ulp");
  CHECK(worst <= max_ulps);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(fast(nan)));
  CHECK(fast(inf) == static_cast<float>(exact(inf)));
  CHECK(fast(-inf) == static_cast<float>(exact(-inf)));
}

}  // namespace

TEST_CASE("vector_math exp matches std::exp within 2 ulp, subnormal results, overflow, NaN and inf",
          "[vector_math]") {
  check_function("exp", [](float x) { return vmath::exp(x); }, [](double x) { return std::exp(x); }, 110.0f, 2.0,
                 0.0);
  // Results in the subnormal range and the overflow boundary.
  CHECK(vmath::exp(-100.0f) == static_cast<float>(std::exp(-100.0)));
  CHECK(vmath::exp(-103.5f) == static_cast<float>(std::exp(-103.5)));
  CHECK(vmath::exp(-200.0f) == 0.0f);
  CHECK(std::isinf(vmath::exp(89.0f)));
}

TEST_CASE("vector_math expm1, tanh and erf match the C library", "[vector_math]") {
  check_function("expm1", [](float x) { return vmath::expm1(x); }, [](double x) { return std::expm1(x); }, 100.0f,
                 3.0, 0.0);
  check_function("tanh", [](float x) { return vmath::tanh(x); }, [](double x) { return std::tanh(x); }, 20.0f, 3.0,
                 0.0);
  // The rational erf is ~5e-7 relative at worst (8 ulp just below 1).
  check_function("erf", [](float x) { return vmath::erf(x); }, [](double x) { return std::erf(x); }, 6.0f, 10.0, 0.0);
}
