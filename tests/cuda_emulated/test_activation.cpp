// relu on the emulator against its CPU twin: the float4 path with every tail length, and the
// scalar path that misaligned float pointers and doubles take.
#include "emulated_checks.h"

#include "ember/kernels/cpu/activation.h"
#include "ember/kernels/cuda/activation.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

// offset 0: 16-byte aligned (the float4 kernel for float); offset 1: misaligned (scalar kernel).
TEMPLATE_TEST_CASE("emulated relu forward and backward match the CPU, aligned and misaligned",
                   "[cuda-emulated][activation]", float, double) {
  std::mt19937_64 rng(11);
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(4), int64_t(5), int64_t(1027), int64_t(70001)}) {
    for (size_t offset : {size_t(0), size_t(1)}) {
      auto x_store = ember::test::random_vector<TestType>(n + 1, rng);
      auto dy_store = ember::test::random_vector<TestType>(n + 1, rng);
      std::vector<TestType> y_store = poisoned<TestType>(n + 1), dx_store = poisoned<TestType>(n + 1);
      const TestType* x = x_store.data() + offset;
      const TestType* dy = dy_store.data() + offset;
      cuda::relu_forward<TestType>(x, y_store.data() + offset, n, nullptr);
      cuda::relu_backward<TestType>(dy, y_store.data() + offset, dx_store.data() + offset, n, nullptr);
      std::vector<TestType> want_y(n), want_dx(n);
      cpu::relu_forward<TestType>(x, want_y.data(), n);
      cpu::relu_backward<TestType>(dy, want_y.data(), want_dx.data(), n);
      const std::vector<TestType> y(y_store.begin() + offset, y_store.begin() + offset + n);
      const std::vector<TestType> dx(dx_store.begin() + offset, dx_store.begin() + offset + n);
      const std::string what = "n " + std::to_string(n) + ", offset " + std::to_string(offset);
      CHECK(matches(y, want_y, "relu forward, " + what, 0.0));
      CHECK(matches(dx, want_dx, "relu backward, " + what, 0.0));
    }
  }
}
