// gemm (the float32 SGEMM and the float64 kernel) and gemm_batched on
// the emulator against the CPU: every transpose pair, alpha and beta (beta 0 ignores NaN in C, as
// kernels/cpu/gemm.h guarantees), sizes that leave partial 128x128x8 (64x64x8) tiles, leading
// dimensions and batch strides past the matrix, and the 16-byte float4 path (aligned pointer, ld
// and stride multiples of 4) against the scalar path (a pointer one element off).
//
// Every matrix lives in a buffer whose padding (columns past the matrix, gaps between batch
// matrices) is NaN: a kernel that reads padding gets a NaN result, one that writes there turns
// the NaN into a number, and either way the whole-buffer comparison fails.
#include "emulated_checks.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cuda/gemm.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

namespace {

// How one operand sits in memory: ld = (its stored row length) + pad, `offset` elements past a
// 16-byte aligned allocation (0: aligned, 1: misaligned), batch matrices `gap` elements apart
// past the matrix itself (gap < 0: stride 0, one matrix broadcast over the batch).
struct Layout {
  int64_t pad = 0;
  size_t offset = 0;
  int64_t gap = 0;
};

template <class T>
struct Operand {
  int64_t rows, cols, ld, stride;
  size_t offset;
  std::vector<T> store;  // NaN outside the matrices
  T* data() { return store.data() + offset; }
};

// rows x cols stored row-major (ld >= cols), `batch` of them; the matrices random, or NaN when
// `nan_inside` (C for beta == 0).
template <class T>
Operand<T> make_operand(int64_t rows, int64_t cols, const Layout& l, int64_t batch, std::mt19937_64& rng,
                        bool nan_inside = false) {
  Operand<T> o;
  o.rows = rows, o.cols = cols, o.offset = l.offset;
  o.ld = std::max<int64_t>(cols + l.pad, 1);
  o.stride = l.gap < 0 ? 0 : rows * o.ld + l.gap;
  const int64_t used = (batch - 1) * o.stride + rows * o.ld;
  o.store = poisoned<T>(static_cast<size_t>(std::max<int64_t>(used, 1)) + l.offset);
  REQUIRE(reinterpret_cast<uintptr_t>(o.store.data()) % 16 == 0);
  for (int64_t b = 0; b < batch; ++b) {
    const auto values = ember::test::random_vector<T>(static_cast<size_t>(rows * cols), rng);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        o.data()[b * o.stride + i * o.ld + j] = nan_inside ? std::numeric_limits<T>::quiet_NaN() : values[i * cols + j];
      }
    }
  }
  return o;
}

struct GemmCase {
  bool ta, tb;
  int64_t M, N, K;
  double alpha, beta;
  Layout a, b, c;
  int64_t batch = 1;
  bool batched_api = false;
};

std::string describe(const GemmCase& g) {
  auto layout = [](const Layout& l) {
    return "(pad " + std::to_string(l.pad) + ", offset " + std::to_string(l.offset) + ", gap " + std::to_string(l.gap) + ")";
  };
  return std::string(g.batched_api ? "gemm_batched" : "gemm") + (g.ta ? " A^T" : " A") + (g.tb ? " B^T" : " B") +
         " M " + std::to_string(g.M) + " N " + std::to_string(g.N) + " K " + std::to_string(g.K) + " alpha " +
         std::to_string(g.alpha) + " beta " + std::to_string(g.beta) + " batch " + std::to_string(g.batch) +
         " A" + layout(g.a) + " B" + layout(g.b) + " C" + layout(g.c);
}

// Runs the case on the emulator and on the CPU (matrix by matrix) and compares all of C's buffer.
template <class T>
bool check_gemm(const GemmCase& g, std::mt19937_64& rng) {
  Operand<T> A = make_operand<T>(g.ta ? g.K : g.M, g.ta ? g.M : g.K, g.a, g.batch, rng);
  Operand<T> B = make_operand<T>(g.tb ? g.N : g.K, g.tb ? g.K : g.N, g.b, g.batch, rng);
  Operand<T> C = make_operand<T>(g.M, g.N, g.c, g.batch, rng, g.beta == 0.0);
  Operand<T> want = C;
  const T alpha = static_cast<T>(g.alpha), beta = static_cast<T>(g.beta);
  if (g.batched_api) {
    cuda::gemm_batched<T>(g.ta, g.tb, g.M, g.N, g.K, alpha, A.data(), A.ld, A.stride, B.data(), B.ld, B.stride,
                          beta, C.data(), C.ld, C.stride, g.batch, ember::test::default_stream());
  } else {
    REQUIRE(g.batch == 1);
    cuda::gemm<T>(g.ta, g.tb, g.M, g.N, g.K, alpha, A.data(), A.ld, B.data(), B.ld, beta, C.data(), C.ld,
                  ember::test::default_stream());
  }
  for (int64_t b = 0; b < g.batch; ++b) {
    cpu::gemm<T>(g.ta, g.tb, g.M, g.N, g.K, alpha, A.data() + b * A.stride, A.ld, B.data() + b * B.stride, B.ld,
                 beta, want.data() + b * want.stride, want.ld);
  }
  return matches(C.store, want.store, describe(g), ember::test::tolerance<T>(), /*nan_equal=*/true);
}

struct Size {
  int64_t M, N, K;
};

// 1x1x1; one row and column past a 128x128 tile with a k tail (K = 9: one full k tile and one
// element); a tall, narrow product with five k tiles, the last partial; a 64-boundary case for the
// float64 tiles.
constexpr Size kSizes[] = {{1, 1, 1}, {129, 130, 9}, {200, 67, 33}, {65, 64, 8}};

}  // namespace

// Natural ld: the scalar loads unless a dimension happens to be a multiple of 4. ld padded to a
// multiple of 4 on an aligned pointer: the float4 loads and stores with every tail. Misaligned
// pointers with odd padding: the scalar path again, through ld > cols.
TEMPLATE_TEST_CASE("emulated gemm matches the CPU for every transpose pair, edge tile and layout",
                   "[cuda-emulated][gemm]", float, double) {
  std::mt19937_64 rng(2024);
  int checked = 0;
  for (const Size& s : kSizes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const int64_t a_cols = ta ? s.M : s.K, b_cols = tb ? s.K : s.N;
      auto pad4 = [](int64_t cols) { return (4 - cols % 4) % 4 + 4; };  // ld a multiple of 4, past cols
      const Layout natural{}, aligned_a{pad4(a_cols), 0, 0}, aligned_b{pad4(b_cols), 0, 0}, aligned_c{pad4(s.N), 0, 0};
      const Layout misaligned{3, 1, 0};
      const GemmCase cases[] = {
          {ta, tb, s.M, s.N, s.K, 1.0, 0.0, natural, natural, natural},
          {ta, tb, s.M, s.N, s.K, -0.75, 0.5, aligned_a, aligned_b, aligned_c},
          {ta, tb, s.M, s.N, s.K, 1.25, 0.0, aligned_a, aligned_b, aligned_c},
          {ta, tb, s.M, s.N, s.K, 0.5, -1.5, misaligned, misaligned, misaligned},
          // Mixed: only C takes the float4 stores, A and B the scalar loads.
          {ta, tb, s.M, s.N, s.K, 2.0, 1.0, misaligned, natural, aligned_c},
      };
      for (const GemmCase& g : cases) {
        CHECK(check_gemm<TestType>(g, rng));
        ++checked;
      }
    }
  }
  CHECK(checked == 4 * 4 * 5);
}

TEMPLATE_TEST_CASE("emulated gemm with K = 0 gives beta * C, and beta 0 zeros a NaN C", "[cuda-emulated][gemm]",
                   float, double) {
  std::mt19937_64 rng(7);
  for (double beta : {0.0, 0.5}) {
    CHECK(check_gemm<TestType>({false, false, 3, 130, 0, 1.0, beta, {}, {}, {}}, rng));
    CHECK(check_gemm<TestType>({true, true, 3, 130, 0, 1.0, beta, {}, {}, {}}, rng));
  }
}

// Batch strides past the matrix (aligned multiples of 4 and odd ones, which turn the float4 path
// off for that operand), a broadcast A or B (stride 0), and C's matrices separated by NaN gaps.
TEMPLATE_TEST_CASE("emulated gemm_batched matches the CPU matrix by matrix, with strides and broadcasts",
                   "[cuda-emulated][gemm]", float, double) {
  std::mt19937_64 rng(99);
  const Layout aligned_gap{4, 0, 8}, odd_gap{4, 0, 3}, broadcast{0, 0, -1}, misaligned{1, 1, 5};
  const GemmCase cases[] = {
      {false, false, 33, 70, 12, 1.0, 0.0, aligned_gap, aligned_gap, aligned_gap, 3, true},
      {true, false, 33, 70, 12, -1.0, 0.25, odd_gap, aligned_gap, odd_gap, 3, true},
      {false, true, 33, 70, 12, 0.5, 1.0, broadcast, odd_gap, aligned_gap, 4, true},
      {true, true, 33, 70, 12, 1.5, 0.0, aligned_gap, broadcast, misaligned, 2, true},
      {false, false, 129, 5, 17, 1.0, -0.5, misaligned, misaligned, misaligned, 2, true},
      {false, false, 1, 1, 1, 1.0, 0.0, odd_gap, odd_gap, odd_gap, 5, true},
  };
  for (const GemmCase& g : cases) CHECK(check_gemm<TestType>(g, rng));
}
