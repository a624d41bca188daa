// gemm against a naive double-accumulation product, over edge sizes, transposes, alpha and beta.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cpu/threading.h"

namespace cpu = ember::kernels::cpu;

namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  double alpha, beta;
};

template <class T>
void check_gemm(const Case& c, std::mt19937& rng, int64_t pad = 0) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
  const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
  const int64_t lda = std::max<int64_t>(a_cols + pad, 1), ldb = std::max<int64_t>(b_cols + pad, 1);
  const int64_t ldc = std::max<int64_t>(c.N + pad, 1);
  std::vector<T> A(std::max<int64_t>(a_rows * lda, 1)), B(std::max<int64_t>(b_rows * ldb, 1));
  std::vector<T> C(std::max<int64_t>(c.M * ldc, 1));
  for (auto& v : A) v = T(dist(rng));
  for (auto& v : B) v = T(dist(rng));
  for (auto& v : C) v = c.beta == 0.0 ? std::numeric_limits<T>::quiet_NaN() : T(dist(rng));
  std::vector<T> C0 = C;
  cpu::gemm<T>(c.ta, c.tb, c.M, c.N, c.K, T(c.alpha), A.data(), lda, B.data(), ldb, T(c.beta),
               C.data(), ldc);
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-13;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      double sum = 0.0, mag = 0.0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double a = c.ta ? A[k * lda + i] : A[i * lda + k];
        const double b = c.tb ? B[j * ldb + k] : B[k * ldb + j];
        sum += a * b;
        mag += std::abs(a * b);
      }
      double expect = c.alpha * sum;
      double scale = std::abs(c.alpha) * mag;
      if (c.beta != 0.0) {
        expect += c.beta * double(C0[i * ldc + j]);
        scale += std::abs(c.beta * double(C0[i * ldc + j]));
      }
      const double got = C[i * ldc + j];
      if (!(std::abs(got - expect) <= tol * (scale + 1.0) * (1.0 + std::sqrt(double(c.K))))) {
        CAPTURE(c.ta, c.tb, c.M, c.N, c.K, c.alpha, c.beta, pad, i, j, got, expect);
        FAIL("gemm element differs from the naive product");
      }
    }
  }
  // Padding columns of C (beyond N) are left untouched.
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = c.N; j < ldc; ++j) {
      const T before = C0[i * ldc + j], after = C[i * ldc + j];
      if (!(before == after || (std::isnan(before) && std::isnan(after)))) {
        CAPTURE(i, j, before, after);
        FAIL("gemm wrote outside the M x N block of C");
      }
    }
  }
}

std::vector<Case> edge_cases() {
  std::vector<Case> cases;
  const int64_t sizes[] = {1, 2, 5, 6, 7, 12, 13, 16, 17, 31, 33, 65};
  std::mt19937 rng(7);
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (int64_t m : {int64_t(1), int64_t(7), int64_t(13), int64_t(25)}) {
        for (int64_t n : {int64_t(1), int64_t(15), int64_t(33)}) {
          for (int64_t k : {int64_t(1), int64_t(3), int64_t(17)}) {
            cases.push_back({bool(ta), bool(tb), m, n, k, 1.0, 0.0});
          }
        }
      }
      for (int r = 0; r < 12; ++r) {
        const double betas[] = {0.0, 1.0, -0.5};
        cases.push_back({bool(ta), bool(tb), sizes[rng() % 12], sizes[rng() % 12],
                         sizes[rng() % 12], r % 2 ? 1.0 : 0.75, betas[r % 3]});
      }
    }
  }
  return cases;
}

}  // namespace

TEMPLATE_TEST_CASE("gemm matches the naive product for odd sizes and transposes", "[gemm]", float,
                   double) {
  std::mt19937 rng(1);
  for (const Case& c : edge_cases()) check_gemm<TestType>(c, rng);
}

TEMPLATE_TEST_CASE("gemm honours leading dimensions larger than the row length", "[gemm]", float,
                   double) {
  std::mt19937 rng(2);
  for (const Case& c : edge_cases()) check_gemm<TestType>(c, rng, 3);
}

TEMPLATE_TEST_CASE("gemm matches the naive product across cache blocks and threads", "[gemm]",
                   float, double) {
  std::mt19937 rng(3);
  const int saved = cpu::get_num_threads();
  for (int threads : {1, 2, 3}) {
    cpu::set_num_threads(threads);
    CAPTURE(threads);
    // Crosses KC (384 / 256), MC (168 / 120) and several micro-tiles in both dimensions.
    check_gemm<TestType>({false, false, 203, 77, 300, 1.0, 0.0}, rng);
    check_gemm<TestType>({false, true, 30, 1100, 400, 1.0, -1.0}, rng);  // two NC panels
    check_gemm<TestType>({true, false, 130, 130, 520, -1.0, 0.5}, rng);
    check_gemm<TestType>({false, true, 64, 10, 320, 1.0, 0.0}, rng);   // linear forward
    check_gemm<TestType>({false, false, 10, 576, 25, 1.0, 0.0}, rng);  // conv1 forward
    check_gemm<TestType>({false, false, 20, 64, 250, 1.0, 1.0}, rng);  // conv2 forward
    check_gemm<TestType>({true, true, 45, 300, 70, 2.0, 0.0}, rng);
  }
  cpu::set_num_threads(saved);
}

TEST_CASE("float gemm gives the same bits for every thread count", "[gemm]") {
  // Threads share out tiles of C on a fixed grid (dynamically), so each tile is computed the same
  // way whichever thread takes it.
  struct Shape {
    bool ta, tb;
    int64_t M, N, K;
  };
  const Shape shapes[] = {{false, false, 203, 1100, 800},  // row tasks over two NC panels, 3 KC
                          {true, true, 9, 2100, 50},       // one sliver of rows: column tasks
                          {false, true, 500, 70, 390}};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int saved = cpu::get_num_threads();
  for (const Shape& s : shapes) {
    CAPTURE(s.ta, s.tb, s.M, s.N, s.K);
    std::vector<float> A(s.M * s.K), B(s.K * s.N);
    for (auto& v : A) v = dist(rng);
    for (auto& v : B) v = dist(rng);
    const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
    std::vector<float> first;
    for (int threads : {1, 2, 3}) {
      cpu::set_num_threads(threads);
      std::vector<float> C(s.M * s.N, 0.5f);
      cpu::gemm<float>(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, 0.25f,
                       C.data(), s.N);
      if (first.empty()) {
        first = C;
      } else {
        CAPTURE(threads);
        CHECK(std::memcmp(C.data(), first.data(), C.size() * sizeof(float)) == 0);
      }
    }
  }
  cpu::set_num_threads(saved);
}

TEMPLATE_TEST_CASE("gemm with K == 0 scales C by beta, and beta == 0 ignores NaN in C", "[gemm]",
                   float, double) {
  std::vector<TestType> C = {1, 2, std::numeric_limits<TestType>::quiet_NaN(), 4, 5, 6};
  const TestType dummy = 1;
  cpu::gemm<TestType>(false, false, 2, 3, 0, 1, &dummy, 1, &dummy, 3, 2, C.data(), 3);
  CHECK(C[0] == 2);
  CHECK(C[1] == 4);
  CHECK(std::isnan(C[2]));
  CHECK(C[5] == 12);
  cpu::gemm<TestType>(false, false, 2, 3, 0, 1, &dummy, 1, &dummy, 3, 0, C.data(), 3);
  for (TestType v : C) CHECK(v == 0);
  std::vector<TestType> A(2 * 4, 1), B(4 * 3, 1);
  std::vector<TestType> D(6, std::numeric_limits<TestType>::quiet_NaN());
  cpu::gemm<TestType>(false, false, 2, 3, 4, 1, A.data(), 4, B.data(), 3, 0, D.data(), 3);
  for (TestType v : D) CHECK(v == 4);
}

TEST_CASE("gemm is bit-for-bit reproducible for a fixed thread count", "[gemm]") {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(-1, 1);
  const int64_t M = 150, N = 170, K = 600;
  std::vector<float> A(M * K), B(K * N), C1(M * N), C2(M * N);
  for (auto& v : A) v = dist(rng);
  for (auto& v : B) v = dist(rng);
  const int saved = cpu::get_num_threads();
  cpu::set_num_threads(2);
  cpu::gemm<float>(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, C1.data(), N);
  cpu::gemm<float>(false, false, M, N, K, 1, A.data(), K, B.data(), N, 0, C2.data(), N);
  cpu::set_num_threads(saved);
  CHECK(C1 == C2);
}

TEST_CASE("gemm float regression: 2x3 times 3x2 of ones (AVX-512 MR/packing mismatch)", "[gemm]") {
  const float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 1, 1, 1, 1, 1};
  float C[4] = {-1, -1, -1, -1};
  cpu::gemm<float>(false, false, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  CHECK(C[0] == 6);
  CHECK(C[1] == 6);
  CHECK(C[2] == 15);
  CHECK(C[3] == 15);
}

TEST_CASE("gemm A * B^T with few columns (the dot-product path) matches the naive product",
          "[gemm]") {
  // N <= 16 and K >= 128: N = 1..16 covers every 4-column pass and remainder; K = 130 and 200
  // end in masked tails, K = 320 does not; beta 0 (NaN in C), 1 and -0.5; ld > N.
  std::mt19937 rng(9);
  for (int64_t n = 1; n <= 16; ++n) {
    for (int64_t k : {int64_t(128), int64_t(130), int64_t(200), int64_t(320)}) {
      CAPTURE(n, k);
      check_gemm<float>({false, true, 7, n, k, 1.0, 0.0}, rng);
      check_gemm<float>({false, true, 3, n, k, -0.75, 1.0}, rng, 5);
      check_gemm<float>({false, true, 64, n, k, 2.0, -0.5}, rng);
    }
  }
}

