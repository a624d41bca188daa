// The loss kernels on the emulator against kernels/cpu/loss.h: softmax and log_softmax (forward and
// backward) in the three row paths (a warp per contiguous row up to 1024 elements, a block per row
// beyond, a thread per strided row when inner > 1), in place where the API allows it; nll_loss and
// cross_entropy with class weights, ignore_index (ignored rows give 0), label smoothing and
// out-of-range targets (a NaN loss / gradient row on both twins); and the fused mse_loss forward
// (element-wise or reduced in one block) and backward.
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

using ember::kernels::ClassLossShape;
using ember::kernels::SoftmaxShape;

// [outer, size, inner] views. inner == 1, warp per row: 1 element (31 idle lanes); 33 elements
// over 9 rows (lane 0 takes two; 2 blocks of 8 warps, the second with one); exactly 1024. Block
// per row: 1025 (thread 0 takes 5 elements, the rest 4) over 2 rows. inner > 1, thread per
// strided row: [3, 5, 7] and [2, 1030, 3] (the latter beyond the warp limit: the same path).
// Kept small: every warp reduction is 5 shuffles of 32 fibers.
constexpr SoftmaxShape kShapes[] = {{1, 1, 1}, {9, 33, 1}, {1, 1024, 1}, {2, 1025, 1}, {3, 5, 7}, {2, 1030, 3}};

std::string describe(const SoftmaxShape& s) {
  const char* path = s.inner != 1 ? " (thread per strided row)" : s.size <= 1024 ? " (warp per row)" : " (block per row)";
  return "[" + std::to_string(s.outer) + ", " + std::to_string(s.size) + ", " + std::to_string(s.inner) + "]" + path;
}

// Targets in range; with `bad`, rows 1, 5, ... get -1 and rows 3, 7, ... get `classes`; with
// `ignore`, every third row gets ignore_index (-100 or a label in range, 0).
std::vector<int64_t> targets(int64_t rows, int64_t classes, bool bad, int64_t ignore, std::mt19937_64& rng) {
  auto t = ember::test::random_vector<int64_t>(rows, rng, 0, static_cast<double>(classes));
  for (int64_t i = 0; i < rows; ++i) {
    if (bad && i % 4 == 1) t[i] = -1;
    if (bad && i % 4 == 3) t[i] = classes;
    if (i % 3 == 2) t[i] = ignore;
  }
  return t;
}

// The loss options each classification test runs through: plain; weighted with ignored rows;
// ignore_index a real class (0) with smoothing; all three with a negative ignore_index.
struct LossCase {
  bool weighted;
  int64_t ignore_index;
  double smoothing;
  const char* what;
};
constexpr LossCase kLossCases[] = {{false, -100, 0.0, "plain"},
                                   {true, -100, 0.0, "weighted"},
                                   {false, 0, 0.1, "smoothed, ignore_index 0"},
                                   {true, -7, 0.25, "weighted, smoothed, ignore_index -7"}};

}  // namespace

TEMPLATE_TEST_CASE("emulated softmax and log_softmax forward and backward match the CPU in every row path, in place too",
                   "[cuda-emulated][loss]", float, double) {
  std::mt19937_64 rng(61);
  const auto stream = ember::test::default_stream();
  for (SoftmaxShape s : kShapes) {
    for (bool log : {true, false}) {
      s.log = log;
      const size_t n = s.numel();
      const std::string what = std::string(log ? "log_softmax " : "softmax ") + describe(s);
      const auto x = ember::test::random_vector<TestType>(n, rng, -5.0, 5.0);
      std::vector<TestType> y = poisoned<TestType>(n), want_y(n);
      cuda::softmax_forward<TestType>(x.data(), y.data(), s, stream);
      cpu::softmax_forward<TestType>(x.data(), want_y.data(), s);
      CHECK(matches(y, want_y, "forward " + what));
      if (s.outer > 1) {  // in place on the multi-row shapes only
        std::vector<TestType> in_place = x;
        cuda::softmax_forward<TestType>(in_place.data(), in_place.data(), s, stream);
        CHECK(matches(in_place, want_y, "forward in place " + what));
      }

      const auto dy = ember::test::random_vector<TestType>(n, rng);
      std::vector<TestType> dx = poisoned<TestType>(n), want_dx(n);
      cuda::softmax_backward<TestType>(dy.data(), want_y.data(), dx.data(), s, stream);
      cpu::softmax_backward<TestType>(dy.data(), want_y.data(), want_dx.data(), s);
      CHECK(matches(dx, want_dx, "backward " + what));
      if (s.outer == 1) continue;
      std::vector<TestType> dx_in_place = dy;
      cuda::softmax_backward<TestType>(dx_in_place.data(), want_y.data(), dx_in_place.data(), s, stream);
      CHECK(matches(dx_in_place, want_dx, "backward in place " + what));
    }
  }
}

// Both twins turn an out-of-range target (not ignore_index) into a NaN row: compared NaN to NaN.
TEMPLATE_TEST_CASE("emulated nll_loss and cross_entropy forward and backward match the CPU with weights, "
                   "ignore_index, smoothing and out-of-range targets",
                   "[cuda-emulated][loss]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(62);
  const auto stream = ember::test::default_stream();
  for (const SoftmaxShape& geometry : kShapes) {
    for (const LossCase& lc : kLossCases) {
      const ClassLossShape s{.outer = geometry.outer, .classes = geometry.size, .inner = geometry.inner,
                             .ignore_index = lc.ignore_index, .label_smoothing = lc.smoothing};
      const bool bad = s.rows() > 1;
      const std::string what = describe(geometry) + ", " + lc.what + (bad ? ", out-of-range targets" : "");
      const size_t n = s.numel(), rows = s.rows();
      const auto logits = ember::test::random_vector<T>(n, rng, -5.0, 5.0);
      const auto t = targets(s.rows(), s.classes, bad, lc.ignore_index, rng);
      const auto w_values = ember::test::random_vector<T>(s.classes, rng, 0.1, 2.0);
      const T* w = lc.weighted ? w_values.data() : nullptr;
      T w_sum = 0;
      for (T v : w_values) w_sum += v;

      std::vector<T> logp = poisoned<T>(n), want_logp(n);
      std::vector<T> loss = poisoned<T>(rows), want_loss(rows), rw = poisoned<T>(rows), want_rw(rows);
      cuda::cross_entropy_forward<T>(logits.data(), t.data(), w, logp.data(), loss.data(), rw.data(), s, stream);
      cpu::cross_entropy_forward<T>(logits.data(), t.data(), w, want_logp.data(), want_loss.data(), want_rw.data(), s);
      // A bad target spoils the row's loss only: its log-probabilities are still written.
      CHECK(matches(logp, want_logp, "cross_entropy_forward log_probs " + what));
      CHECK(matches(loss, want_loss, "cross_entropy_forward loss " + what, ember::test::tolerance<T>(), true));
      CHECK(matches(rw, want_rw, "cross_entropy_forward row weights " + what, 0.0, true));

      const auto g = ember::test::random_vector<T>(rows, rng);
      std::vector<T> d = poisoned<T>(n), want_d(n);
      cuda::cross_entropy_backward<T>(want_logp.data(), t.data(), w, &w_sum, g.data(), d.data(), s, stream);
      cpu::cross_entropy_backward<T>(want_logp.data(), t.data(), w, &w_sum, g.data(), want_d.data(), s);
      CHECK(matches(d, want_d, "cross_entropy_backward " + what, ember::test::tolerance<T>(), true));

      if (lc.smoothing != 0.0) continue;  // nll has no smoothing: once per weight / ignore_index
      std::vector<T> nll = poisoned<T>(rows), want_nll(rows);
      cuda::nll_loss_forward<T>(want_logp.data(), t.data(), w, nll.data(), rw.data(), s, stream);
      cpu::nll_loss_forward<T>(want_logp.data(), t.data(), w, want_nll.data(), want_rw.data(), s);
      CHECK(matches(nll, want_nll, "nll_loss_forward " + what, 0.0, true));
      CHECK(matches(rw, want_rw, "nll_loss_forward row weights " + what, 0.0, true));
      std::vector<T> dnll = poisoned<T>(n), want_dnll(n);
      cuda::nll_loss_backward<T>(g.data(), t.data(), w, dnll.data(), s, stream);
      cpu::nll_loss_backward<T>(g.data(), t.data(), w, want_dnll.data(), s);
      CHECK(matches(dnll, want_dnll, "nll_loss_backward " + what, 0.0, true));
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
