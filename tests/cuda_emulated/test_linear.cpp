// linear's bias helpers on the emulator against their CPU twins (kernels/cpu/linear.h):
// broadcast_rows bit for bit; column_sums, whose kernel sums each column in 8 interleaved partial
// sums (the CPU in order), within rounding; no rows gives zeros.
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/kernels/cpu/linear.h"
#include "ember/kernels/cuda/linear.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

TEMPLATE_TEST_CASE("emulated broadcast_rows matches the CPU: the row in every row", "[cuda-emulated][linear]", float,
                   double) {
  std::mt19937_64 rng(5);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 300}, {257, 3}}) {
    const auto row = ember::test::random_vector<TestType>(cols, rng);
    std::vector<TestType> out = poisoned<TestType>(rows * cols), want(rows * cols);
    cpu::broadcast_rows<TestType>(row.data(), rows, cols, want.data());
    cuda::broadcast_rows<TestType>(row.data(), rows, cols, out.data(), ember::test::default_stream());
    CHECK(matches(out, want, "broadcast_rows " + std::to_string(rows) + "x" + std::to_string(cols), 0.0));
  }
}

TEMPLATE_TEST_CASE("emulated column_sums matches the CPU, and gives zeros for no rows", "[cuda-emulated][linear]",
                   float, double) {
  std::mt19937_64 rng(6);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 5}, {1, 1}, {1, 33}, {37, 70}, {8, 32}, {300, 3}}) {
    const auto x = ember::test::random_vector<TestType>(rows * cols, rng);
    std::vector<TestType> out = poisoned<TestType>(cols), want(cols);
    cpu::column_sums<TestType>(x.data(), rows, cols, want.data());
    cuda::column_sums<TestType>(x.data(), rows, cols, out.data(), ember::test::default_stream());
    CHECK(matches(out, want, "column_sums " + std::to_string(rows) + "x" + std::to_string(cols)));
  }
}
