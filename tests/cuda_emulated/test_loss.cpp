// The loss kernels on the emulator: log_softmax, nll_loss and cross_entropy (forward and backward)
// against kernels/cpu/loss.h, in both row paths (a warp per row up to 1024 columns, a block per row
// beyond), in place where the API allows it, and with out-of-range targets, which the CUDA code
// turns into a NaN loss / gradient row (the CPU twin requires targets in range and would read out
// of bounds, so its reference runs on in-range targets and the bad rows are expected NaN); and the
// fused mse_loss forward (element-wise or reduced in one block) and backward against its CPU twin.
#include "emulated_checks.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ember/kernels/cpu/loss.h"
#include "ember/kernels/cuda/loss.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

namespace {

struct RowShape {
  int64_t rows, cols;
};
// Warp per row: 1 column (31 idle lanes); 33 columns over 9 rows (lane 0 takes two columns; 2
// blocks of 8 warps, the second with one); exactly 1024. Block per row: 1025 (thread 0 takes 5
// columns, the rest 4) over 2 rows. Kept small: every warp reduction is 5 shuffles of 32 fibers.
constexpr RowShape kRowShapes[] = {{1, 1}, {9, 33}, {1, 1024}, {2, 1025}};

std::string describe(const RowShape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + (s.cols <= 1024 ? " (warp per row)" : " (block per row)");
}

// Targets in range; with `bad`, rows 1, 5, ... get -1 and rows 3, 7, ... get cols.
std::vector<int64_t> targets(const RowShape& s, bool bad, std::mt19937_64& rng) {
  auto t = ember::test::random_vector<int64_t>(s.rows, rng, 0, static_cast<double>(s.cols));
  for (int64_t i = 0; bad && i < s.rows; ++i) {
    if (i % 4 == 1) t[i] = -1;
    if (i % 4 == 3) t[i] = s.cols;
  }
  return t;
}
bool in_range(int64_t t, int64_t cols) { return t >= 0 && t < cols; }
// The CPU twin's input: out-of-range targets replaced by 0 (their rows are then overwritten).
std::vector<int64_t> clamped(std::vector<int64_t> t, int64_t cols) {
  for (auto& v : t) v = in_range(v, cols) ? v : 0;
  return t;
}

template <class T>
constexpr T nan() {
  return std::numeric_limits<T>::quiet_NaN();
}

}  // namespace

TEMPLATE_TEST_CASE("emulated log_softmax forward and backward match the CPU in both row paths, in place too",
                   "[cuda-emulated][loss]", float, double) {
  std::mt19937_64 rng(61);
  const auto stream = ember::test::default_stream();
  for (const RowShape& s : kRowShapes) {
    const size_t n = s.rows * s.cols;
    const std::string what = describe(s);
    const auto x = ember::test::random_vector<TestType>(n, rng, -5.0, 5.0);
    std::vector<TestType> y = poisoned<TestType>(n), want_y(n);
    cuda::log_softmax_forward<TestType>(x.data(), y.data(), s.rows, s.cols, stream);
    cpu::log_softmax_forward<TestType>(x.data(), want_y.data(), s.rows, s.cols);
    CHECK(matches(y, want_y, "log_softmax_forward " + what));
    if (s.rows > 1) {  // in place on the multi-row shapes only (one of each path)
      std::vector<TestType> in_place = x;
      cuda::log_softmax_forward<TestType>(in_place.data(), in_place.data(), s.rows, s.cols, stream);
      CHECK(matches(in_place, want_y, "log_softmax_forward in place " + what));
    }

    const auto dy = ember::test::random_vector<TestType>(n, rng);
    std::vector<TestType> dx = poisoned<TestType>(n), want_dx(n);
    cuda::log_softmax_backward<TestType>(dy.data(), want_y.data(), dx.data(), s.rows, s.cols, stream);
    cpu::log_softmax_backward<TestType>(dy.data(), want_y.data(), want_dx.data(), s.rows, s.cols);
    CHECK(matches(dx, want_dx, "log_softmax_backward " + what));
    if (s.rows == 1) continue;  // the last check: in place on the multi-row shapes only
    std::vector<TestType> dx_in_place = dy;
    cuda::log_softmax_backward<TestType>(dx_in_place.data(), want_y.data(), dx_in_place.data(), s.rows, s.cols,
                                         stream);
    CHECK(matches(dx_in_place, want_dx, "log_softmax_backward in place " + what));
  }
}

TEMPLATE_TEST_CASE("emulated nll_loss forward and backward match the CPU, NaN rows for out-of-range targets",
                   "[cuda-emulated][loss]", float, double) {
  std::mt19937_64 rng(62);
  const auto stream = ember::test::default_stream();
  for (const RowShape& s : {RowShape{1, 1}, RowShape{300, 7}, RowShape{5, 1500}}) {
    for (bool bad : {false, true}) {
      const std::string what = describe(s) + (bad ? ", out-of-range targets" : "");
      const size_t n = s.rows * s.cols;
      const auto logp = ember::test::random_vector<TestType>(n, rng, -8.0, 0.0);
      const auto t = targets(s, bad, rng), t_cpu = clamped(t, s.cols);
      std::vector<TestType> loss = poisoned<TestType>(s.rows), want_loss(s.rows);
      cuda::nll_loss_forward<TestType>(logp.data(), t.data(), loss.data(), s.rows, s.cols, stream);
      cpu::nll_loss_forward<TestType>(logp.data(), t_cpu.data(), want_loss.data(), s.rows, s.cols);
      for (int64_t i = 0; i < s.rows; ++i) {
        if (!in_range(t[i], s.cols)) want_loss[i] = nan<TestType>();
      }
      CHECK(matches(loss, want_loss, "nll_loss_forward " + what, 0.0, /*nan_equal=*/true));

      const auto g = ember::test::random_vector<TestType>(s.rows, rng);
      std::vector<TestType> d = poisoned<TestType>(n), want_d(n);
      cuda::nll_loss_backward<TestType>(g.data(), t.data(), d.data(), s.rows, s.cols, stream);
      cpu::nll_loss_backward<TestType>(g.data(), t_cpu.data(), want_d.data(), s.rows, s.cols);
      for (int64_t i = 0; i < s.rows; ++i) {
        if (!in_range(t[i], s.cols)) std::fill_n(want_d.begin() + i * s.cols, s.cols, nan<TestType>());
      }
      CHECK(matches(d, want_d, "nll_loss_backward " + what, 0.0, /*nan_equal=*/true));
    }
  }
}

TEMPLATE_TEST_CASE("emulated cross_entropy forward and backward match the CPU, NaN rows for out-of-range targets",
                   "[cuda-emulated][loss]", float, double) {
  std::mt19937_64 rng(63);
  const auto stream = ember::test::default_stream();
  for (const RowShape& s : kRowShapes) {
    {
      // Multi-row shapes get out-of-range targets in some rows (the others stay checked).
      const bool bad = s.rows > 1;
      const std::string what = describe(s) + (bad ? ", out-of-range targets" : "");
      const size_t n = s.rows * s.cols;
      const auto logits = ember::test::random_vector<TestType>(n, rng, -5.0, 5.0);
      const auto t = targets(s, bad, rng), t_cpu = clamped(t, s.cols);
      std::vector<TestType> logp = poisoned<TestType>(n), want_logp(n);
      std::vector<TestType> loss = poisoned<TestType>(s.rows), want_loss(s.rows);
      cuda::cross_entropy_forward<TestType>(logits.data(), t.data(), logp.data(), loss.data(), s.rows, s.cols, stream);
      cpu::cross_entropy_forward<TestType>(logits.data(), t_cpu.data(), want_logp.data(), want_loss.data(), s.rows,
                                           s.cols);
      for (int64_t i = 0; i < s.rows; ++i) {
        if (!in_range(t[i], s.cols)) want_loss[i] = nan<TestType>();
      }
      // A bad target spoils the row's loss only: its log-probabilities are still written.
      CHECK(matches(logp, want_logp, "cross_entropy_forward log_probs " + what));
      CHECK(matches(loss, want_loss, "cross_entropy_forward loss " + what, ember::test::tolerance<TestType>(),
                    /*nan_equal=*/true));

      const auto g = ember::test::random_vector<TestType>(s.rows, rng);
      std::vector<TestType> d = poisoned<TestType>(n), want_d(n);
      cuda::cross_entropy_backward<TestType>(want_logp.data(), t.data(), g.data(), d.data(), s.rows, s.cols, stream);
      cpu::cross_entropy_backward<TestType>(want_logp.data(), t_cpu.data(), g.data(), want_d.data(), s.rows, s.cols);
      for (int64_t i = 0; i < s.rows; ++i) {
        if (!in_range(t[i], s.cols)) std::fill_n(want_d.begin() + i * s.cols, s.cols, nan<TestType>());
      }
      CHECK(matches(d, want_d, "cross_entropy_backward " + what, ember::test::tolerance<TestType>(),
                    /*nan_equal=*/true));
    }
  }
}

// Both sum the squares in double (the CPU in order, the kernel in 1024 strided partial sums).
TEMPLATE_TEST_CASE("emulated mse_loss_forward matches the CPU: squared errors, or their scaled sum in one block",
                   "[cuda-emulated][loss]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(64);
  const auto stream = ember::test::default_stream();
  // n == 0: the reduction still writes 0; n == 1: a sum; n == 3001: a mean (1024 threads, most
  // with 3 elements).
  for (auto [n, scale] : {std::pair<int64_t, double>{0, 1.0}, {1, 1.0}, {3001, 1.0 / 3001}}) {
    const auto x = ember::test::random_vector<T>(n, rng, -3.0, 3.0);
    const auto t = ember::test::random_vector<T>(n, rng, -3.0, 3.0);
    const std::string what = "n " + std::to_string(n) + ", scale " + std::to_string(scale);
    if (n > 0) {
      std::vector<T> out = poisoned<T>(n), want(n);
      cpu::mse_loss_forward<T>(x.data(), t.data(), want.data(), n, /*reduce=*/false, 1.0);
      cuda::mse_loss_forward<T>(x.data(), t.data(), out.data(), n, /*reduce=*/false, 1.0, stream);
      CHECK(matches(out, want, "mse_loss_forward, no reduction, " + what, 0.0));
    }
    std::vector<T> reduced = poisoned<T>(1), want_reduced(1);
    cpu::mse_loss_forward<T>(x.data(), t.data(), want_reduced.data(), n, /*reduce=*/true, scale);
    cuda::mse_loss_forward<T>(x.data(), t.data(), reduced.data(), n, /*reduce=*/true, scale, stream);
    CHECK(matches(reduced, want_reduced, "mse_loss_forward, reduced, " + what));
  }
}

TEMPLATE_TEST_CASE("emulated mse_loss_backward scales by a scalar or per-element gradient, with and without dt",
                   "[cuda-emulated][loss]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(65);
  const auto stream = ember::test::default_stream();
  for (int64_t n : {int64_t(1), int64_t(300), int64_t(1001)}) {
    const auto x = ember::test::random_vector<T>(n, rng, -3.0, 3.0);
    const auto t = ember::test::random_vector<T>(n, rng, -3.0, 3.0);
    const auto grad = ember::test::random_vector<T>(n, rng);
    for (bool scalar : {true, false}) {
      const double scale = scalar ? 1.0 / static_cast<double>(n) : 1.0;
      std::vector<T> want_dx(n), want_dt(n);
      cpu::mse_loss_backward<T>(x.data(), t.data(), grad.data(), scalar, scale, want_dx.data(), want_dt.data(), n);
      const std::string what = std::string(scalar ? "scalar" : "per-element") + " gradient, n " + std::to_string(n);
      std::vector<T> dx = poisoned<T>(n), dt = poisoned<T>(n);
      cuda::mse_loss_backward<T>(x.data(), t.data(), grad.data(), scalar, scale, dx.data(), dt.data(), n, stream);
      CHECK(matches(dx, want_dx, "mse_loss_backward dx, " + what));
      CHECK(matches(dt, want_dt, "mse_loss_backward dt, " + what));
      std::vector<T> dx_only = poisoned<T>(n);
      cuda::mse_loss_backward<T>(x.data(), t.data(), grad.data(), scalar, scale, dx_only.data(), nullptr, n, stream);
      CHECK(matches(dx_only, want_dx, "mse_loss_backward dx without dt, " + what));
    }
  }
}
