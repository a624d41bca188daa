// cpu::sgd_step against torch.optim.SGD's rule written out step by step in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "ember/kernels/cpu/optimizer_step.h"

namespace cpu = ember::kernels::cpu;

TEMPLATE_TEST_CASE("cpu::sgd_step follows torch.optim.SGD over several steps", "[sgd]", float, double) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> dist(-1, 1);
  const double tol = std::is_same_v<TestType, float> ? 1e-6 : 1e-14;
  struct Opt { double lr, momentum, dampening, wd; bool nesterov; };
  for (const Opt& o : {Opt{0.01, 0.5, 0.0, 0.0, false}, Opt{0.1, 0.0, 0.0, 0.0, false},
                       Opt{0.05, 0.9, 0.1, 1e-2, false}, Opt{0.05, 0.9, 0.0, 1e-3, true},
                       Opt{0.2, 0.0, 0.0, 0.5, false}}) {
    CAPTURE(o.lr, o.momentum, o.dampening, o.wd, o.nesterov);
    const int64_t n = 100001;
    std::vector<TestType> p(n), buf(n, TestType(NAN)), g(n);
    std::vector<double> rp(n), rbuf(n);
    for (int64_t i = 0; i < n; ++i) rp[i] = p[i] = TestType(dist(rng));
    for (int step = 0; step < 3; ++step) {
      for (int64_t i = 0; i < n; ++i) g[i] = TestType(dist(rng));
      using T = TestType;
      const ember::kernels::SgdRule<T> rule{T(o.lr), T(o.momentum), T(1 - o.dampening), T(o.wd), o.momentum != 0,
                                            o.nesterov, false};
      ember::kernels::OptimizerTensor<T> t;
      t.param = p.data();
      t.grad = g.data();
      t.state[0] = o.momentum != 0 ? buf.data() : nullptr;
      t.numel = n;
      t.first_step = step == 0;
      cpu::sgd_step<T>(&t, 1, rule);
      for (int64_t i = 0; i < n; ++i) {
        double d = double(g[i]) + o.wd * rp[i];
        if (o.momentum != 0) {
          rbuf[i] = step == 0 ? d : o.momentum * rbuf[i] + (1 - o.dampening) * d;
          d = o.nesterov ? d + o.momentum * rbuf[i] : rbuf[i];
        }
        rp[i] -= o.lr * d;
        if (!(std::abs(double(p[i]) - rp[i]) <= tol * 4)) {
          CAPTURE(step, i, p[i], rp[i]);
          FAIL("cpu::sgd_step differs from torch.optim.SGD's rule");
        }
      }
    }
  }
}
