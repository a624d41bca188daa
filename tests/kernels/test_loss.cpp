// log_softmax, nll, the fused cross-entropy and the fused mse against double references.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "ember/kernels/cpu/loss.h"

namespace cpu = ember::kernels::cpu;

namespace {

template <class T>
void require_close(const std::vector<T>& got, const std::vector<double>& want, double tol,
                   const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(double(got[i]) - want[i]) <= tol * (1.0 + std::abs(want[i])))) {
      CAPTURE(what, i, got[i], want[i]);
      FAIL("loss kernel differs from the double reference");
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("log_softmax, nll_loss and cross_entropy match the double reference", "[loss]",
                   float, double) {
  std::mt19937 rng(9);
  // x - max loses up to an ulp of |x|: the bound scales with the logits' magnitude (~500).
  const double tol = (std::is_same_v<TestType, float> ? 2e-7 : 1e-15) * 1000.0;
  for (auto [rows, cols, spread] : {std::tuple<int64_t, int64_t, double>{64, 10, 5.0},
                                    {1, 1, 1.0}, {3, 7, 1.0}, {5000, 10, 3.0}, {2, 1000, 200.0}}) {
    CAPTURE(rows, cols, spread);
    std::uniform_real_distribution<double> dist(-spread, spread);
    std::vector<TestType> x(rows * cols), dy(rows * cols), g(rows);
    std::vector<int64_t> t(rows);
    for (auto& v : x) v = TestType(dist(rng) + 500.0);  // large offset: needs the max shift
    for (auto& v : dy) v = TestType(dist(rng) / spread);
    for (auto& v : g) v = TestType(dist(rng) / spread);
    for (auto& v : t) v = int64_t(rng() % cols);
    std::vector<double> lp(rows * cols), dlsm(rows * cols), loss(rows), dnll(rows * cols, 0.0),
        dce(rows * cols);
    for (int64_t i = 0; i < rows; ++i) {
      double m = x[i * cols];
      for (int64_t j = 0; j < cols; ++j) m = std::max(m, double(x[i * cols + j]));
      double s = 0, sdy = 0;
      for (int64_t j = 0; j < cols; ++j) s += std::exp(double(x[i * cols + j]) - m);
      for (int64_t j = 0; j < cols; ++j) lp[i * cols + j] = double(x[i * cols + j]) - m - std::log(s);
      for (int64_t j = 0; j < cols; ++j) sdy += double(dy[i * cols + j]);
      for (int64_t j = 0; j < cols; ++j)
        dlsm[i * cols + j] = double(dy[i * cols + j]) - std::exp(lp[i * cols + j]) * sdy;
      loss[i] = -lp[i * cols + t[i]];
      dnll[i * cols + t[i]] = -double(g[i]);
      for (int64_t j = 0; j < cols; ++j)
        dce[i * cols + j] = (std::exp(lp[i * cols + j]) - (j == t[i] ? 1.0 : 0.0)) * double(g[i]);
    }
    const ember::kernels::SoftmaxShape sm{.outer = rows, .size = cols, .inner = 1, .log = true};
    const ember::kernels::ClassLossShape cl{.outer = rows, .classes = cols};
    std::vector<TestType> y(x.size()), dx(x.size()), l(rows), rw(rows), dl(x.size(), TestType(NAN));
    cpu::softmax_forward<TestType>(x.data(), y.data(), sm);
    require_close(y, lp, tol, "log_softmax");
    cpu::softmax_backward<TestType>(dy.data(), y.data(), dx.data(), sm);
    require_close(dx, dlsm, tol, "log_softmax_backward");
    cpu::nll_loss_forward<TestType>(y.data(), t.data(), nullptr, l.data(), rw.data(), cl);
    require_close(l, loss, tol, "nll_loss");
    cpu::nll_loss_backward<TestType>(g.data(), t.data(), nullptr, dl.data(), cl);
    require_close(dl, dnll, 0.0, "nll_loss_backward");
    std::vector<TestType> lp2(x.size()), l2(rows), dlogits(x.size(), TestType(NAN));
    cpu::cross_entropy_forward<TestType>(x.data(), t.data(), nullptr, lp2.data(), l2.data(), rw.data(), cl);
    require_close(lp2, lp, tol, "cross_entropy log_probs");
    require_close(l2, loss, tol, "cross_entropy loss");
    cpu::cross_entropy_backward<TestType>(lp2.data(), t.data(), nullptr, nullptr, g.data(), dlogits.data(), cl);
    require_close(dlogits, dce, tol, "cross_entropy_backward");
  }
}

// Sizes 0 (a sum of nothing is 0), 1, and one past the parallel threshold (32768 elements).
TEMPLATE_TEST_CASE("mse_loss gives squared errors or their scaled sum, and its backward 2 (x - t) g",
                   "[loss]", float, double) {
  std::mt19937 rng(10);
  std::uniform_real_distribution<double> dist(-3, 3);
  const double tol = std::is_same_v<TestType, float> ? 1e-6 : 1e-14;
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(37), int64_t(40001)}) {
    CAPTURE(n);
    std::vector<TestType> x(n), t(n), grad(n);
    for (auto& v : x) v = TestType(dist(rng));
    for (auto& v : t) v = TestType(dist(rng));
    for (auto& v : grad) v = TestType(dist(rng));
    std::vector<double> sq(n);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = double(x[i]) - double(t[i]);
      sq[i] = d * d;
      total += sq[i];
    }
    std::vector<TestType> out(n, TestType(NAN));
    cpu::mse_loss_forward<TestType>(x.data(), t.data(), out.data(), n, /*reduce=*/false, 1.0);
    require_close(out, sq, tol, "mse_loss_forward, no reduction");
    for (double scale : {1.0, n > 0 ? 1.0 / double(n) : 1.0}) {
      std::vector<TestType> reduced(1, TestType(NAN));
      cpu::mse_loss_forward<TestType>(x.data(), t.data(), reduced.data(), n, /*reduce=*/true, scale);
      require_close(reduced, {scale * total}, tol, "mse_loss_forward, reduced");
    }
    if (n == 0) continue;
    for (bool scalar : {true, false}) {
      CAPTURE(scalar);
      const double scale = scalar ? 1.0 / double(n) : 1.0;
      std::vector<double> want_dx(n), want_dt(n);
      for (int64_t i = 0; i < n; ++i) {
        const double g = scalar ? scale * double(grad[0]) : double(grad[i]);
        want_dx[i] = 2.0 * (double(x[i]) - double(t[i])) * g;
        want_dt[i] = -want_dx[i];
      }
      std::vector<TestType> dx(n, TestType(NAN)), dt(n, TestType(NAN)), dx_only(n, TestType(NAN));
      cpu::mse_loss_backward<TestType>(x.data(), t.data(), grad.data(), scalar, scale, dx.data(), dt.data(), n);
      require_close(dx, want_dx, tol, "mse_loss_backward dx");
      require_close(dt, want_dt, tol, "mse_loss_backward dt");
      cpu::mse_loss_backward<TestType>(x.data(), t.data(), grad.data(), scalar, scale, dx_only.data(), nullptr, n);
      require_close(dx_only, want_dx, tol, "mse_loss_backward dx without dt");
    }
  }
}
