// dropout: mask from the Philox stream, scaling, backward, and thread-count independence.
#include <catch2/catch.hpp>

#include <vector>

#include "ember/common/philox.h"
#include "ember/kernels/cpu/dropout.h"
#include "ember/kernels/cpu/threading.h"

namespace cpu = ember::kernels::cpu;

TEMPLATE_TEST_CASE("dropout keeps element i iff philox::uniform(seed, offset, i) > p and scales it",
                   "[dropout]", float, double) {
  const int saved = cpu::get_num_threads();
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(100003)}) {
    for (double p : {0.0, 0.3, 0.5, 1.0}) {
      std::vector<TestType> x(n), y(n), dy(n), dx(n);
      for (int64_t i = 0; i < n; ++i) x[i] = dy[i] = TestType(i % 17) - TestType(8);
      std::vector<uint8_t> mask(n), mask1(n);
      std::vector<TestType> y1(n);
      cpu::set_num_threads(1);
      cpu::dropout_forward<TestType>(x.data(), y1.data(), mask1.data(), n, p, 42, 7);
      cpu::set_num_threads(2);
      cpu::dropout_forward<TestType>(x.data(), y.data(), mask.data(), n, p, 42, 7);
      cpu::dropout_backward<TestType>(dy.data(), mask.data(), dx.data(), n, p);
      CHECK(mask == mask1);
      CHECK(y == y1);
      int64_t kept = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = double(ember::philox::uniform(42, 7, uint64_t(i))) > p;
        const TestType want = keep ? x[i] * TestType(1.0 / (1.0 - p)) : TestType(0);
        kept += keep;
        if (mask[i] != keep || y[i] != want || dx[i] != want) {
          CAPTURE(n, p, i, int(mask[i]), keep, y[i], dx[i], want);
          FAIL("dropout differs");
        }
      }
      if (n > 1000) {
        CAPTURE(p, kept, n);
        CHECK(std::abs(double(kept) / double(n) - (1.0 - p)) < 0.01);
      }
    }
  }
  cpu::set_num_threads(saved);
}
