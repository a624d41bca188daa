#include "ember/kernels/cpu/gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "ember/common/error.h"
#include "ember/kernels/cpu/cpu_features.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// ---------------------------------------------------------------------------------------------
// The plain loop: every double product, and float where the CPU has no AVX2/FMA.

template <class T>
void scale_rows(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (beta == T(0)) {
      std::fill(c, c + N, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
}

template <class T>
void simple_gemm_rows(bool trans_a, bool trans_b, int64_t i0, int64_t i1, int64_t N, int64_t K,
                      T alpha, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
                      int64_t ldc) {
  constexpr int64_t kBlockK = 256;
  for (int64_t i = i0; i < i1; ++i) {
    T* c = C + i * ldc;
    scale_rows<T>(1, N, beta, c, ldc);
    for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
      const int64_t k1 = std::min(K, k0 + kBlockK);
      if (trans_b) {
        for (int64_t j = 0; j < N; ++j) {
          const T* b = B + j * ldb;
          T sum = T(0);
          for (int64_t k = k0; k < k1; ++k) sum += (trans_a ? A[k * lda + i] : A[i * lda + k]) * b[k];
          c[j] += alpha * sum;
        }
      } else {
        for (int64_t k = k0; k < k1; ++k) {
          const T a = alpha * (trans_a ? A[k * lda + i] : A[i * lda + k]);
          const T* b = B + k * ldb;
          for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
      }
    }
  }
}

template <class T>
void simple_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                 int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const bool parallel = !omp_in_parallel() && get_num_threads() > 1 && M > 1 &&
                        double(M) * double(N) * double(K) > 1e5;
  if (!parallel) {
    simple_gemm_rows(trans_a, trans_b, 0, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
#pragma omp parallel for num_threads(get_num_threads()) schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    simple_gemm_rows(trans_a, trans_b, i, i + 1, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

// ---------------------------------------------------------------------------------------------
// The packed float path (GotoBLAS / BLIS structure).
//
// Loops, outer to inner: jc over NC columns of C, pc over KC of the inner dimension (pack a KC x NC
// panel of op(B) into NR-wide slivers, sized for L2), ic over MC rows (pack an MC x KC block of
// op(A) into MR-tall slivers), ir over MR-tall slivers (one A sliver, sized for L1), jr over
// NR-wide slivers, then the MR x NR micro-kernel, which keeps its tile of C in registers for the
// whole KC loop. Edge tiles are computed into a local tile and copied out.

using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                             float alpha, float beta);
// The same product for an edge tile: only rows < mr and columns < nr of C are read and written.
using EdgeKernel = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                            float alpha, float beta, int64_t mr, int64_t nr);

struct Arch {
  int64_t mr, nr, mc, kc, nc;
  MicroKernel kernel;
  EdgeKernel edge_kernel;  // nullptr: edge tiles go through a scratch tile and a copy
};

// AVX-512: 14 x 32 tile = 28 zmm accumulators, 2 for the B row, 1 broadcast.
// The tile heights below are the packing strides too: Arch::mr must equal them (a mismatch made
// every k > 0 read padding, the bug behind 2x3 * 3x2 giving 1 1 4 4).
constexpr int kAvx512MR = 14, kAvx512NR = 32, kAvx2MR = 6, kAvx2NR = 16;

// acc = the 14 x 32 product of an A sliver and a B sliver over kc steps (acc0: columns 0-15,
// acc1: 16-31), shared by the full-tile and edge kernels. kPrefetch: B streams from L2 (the A
// sliver stays in L1), so fetch 16 rows of k ahead; the edge kernel's slivers are short.
template <bool kPrefetch>
__attribute__((target("avx512f"), always_inline)) inline void accumulate_14x32(
    int64_t kc, const float* a, const float* b, __m512 (&acc0)[kAvx512MR],
    __m512 (&acc1)[kAvx512MR]) {
  static_assert(kAvx512NR == 32, "the AVX-512 kernel holds two zmm per row");
#pragma GCC unroll 14
  for (int i = 0; i < kAvx512MR; ++i) {
    acc0[i] = _mm512_setzero_ps();
    acc1[i] = _mm512_setzero_ps();
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
    if constexpr (kPrefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(b + 512), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + 512 + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 14
    for (int i = 0; i < kAvx512MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      acc0[i] = _mm512_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm512_fmadd_ps(ai, b1, acc1[i]);
    }
    a += kAvx512MR;
    b += 32;
  }
}

__attribute__((target("avx512f"))) void micro_avx512_14x32(int64_t kc, const float* a,
                                                            const float* b, float* c, int64_t ldc,
                                                            float alpha, float beta) {
  constexpr int MR = kAvx512MR;
  __m512 acc0[MR], acc1[MR];
  accumulate_14x32<true>(kc, a, b, acc0, acc1);
  const __m512 va = _mm512_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, acc0[i]));
      _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, acc1[i]));
    }
  } else {
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      float* row = c + i * ldc;
      _mm512_storeu_ps(row, _mm512_fmadd_ps(va, acc0[i], _mm512_mul_ps(vb, _mm512_loadu_ps(row))));
      _mm512_storeu_ps(row + 16,
                       _mm512_fmadd_ps(va, acc1[i], _mm512_mul_ps(vb, _mm512_loadu_ps(row + 16))));
    }
  }
}

// The AVX-512 kernel for an edge tile (mr <= 14 rows, nr <= 32 columns): the packed slivers are
// zero-padded, so the full 14 x 32 product is computed and only the valid part is stored, with
// masked loads and stores (no scratch tile, no scalar copy). The tutorial network's thin
// products (10 or 20 output channels) are all edge tiles, so this path carries most of its work.
__attribute__((target("avx512f"))) void micro_avx512_14x32_edge(int64_t kc, const float* a,
                                                                 const float* b, float* c,
                                                                 int64_t ldc, float alpha,
                                                                 float beta, int64_t mr,
                                                                 int64_t nr) {
  constexpr int MR = kAvx512MR;
  __m512 acc0[MR], acc1[MR];
  accumulate_14x32<false>(kc, a, b, acc0, acc1);
  // Column masks: lanes [0, nr) of the 32, split over the two zmm of a row.
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
    float* row = c + i * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc0[i]), r1 = _mm512_mul_ps(va, acc1[i]);
    if (beta != 0.0f) {  // beta == 0 never reads C (old NaNs vanish)
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, row), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, row + 16), r1);
    }
    _mm512_mask_storeu_ps(row, m0, r0);
    _mm512_mask_storeu_ps(row + 16, m1, r1);
  }
}

// AVX2/FMA: 6 x 16 tile = 12 ymm accumulators, 2 for the B row, 1 broadcast.
__attribute__((target("avx2,fma"))) void micro_avx2_6x16(int64_t kc, const float* a,
                                                          const float* b, float* c, int64_t ldc,
                                                          float alpha, float beta) {
  constexpr int MR = kAvx2MR;
  static_assert(kAvx2NR == 16, "the AVX2 kernel holds two ymm per row");
  __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    acc0[i] = _mm256_setzero_ps();
    acc1[i] = _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + i);
      acc0[i] = _mm256_fmadd_ps(ai, b0, acc0[i]);
      acc1[i] = _mm256_fmadd_ps(ai, b1, acc1[i]);
    }
    a += MR;
    b += 16;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, acc0[i]));
      _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, acc1[i]));
    }
  } else {
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      float* row = c + i * ldc;
      _mm256_storeu_ps(row, _mm256_fmadd_ps(va, acc0[i], _mm256_mul_ps(vb, _mm256_loadu_ps(row))));
      _mm256_storeu_ps(row + 8,
                       _mm256_fmadd_ps(va, acc1[i], _mm256_mul_ps(vb, _mm256_loadu_ps(row + 8))));
    }
  }
}

// Which micro-kernel this CPU runs; nullptr when it has neither AVX-512 nor AVX2/FMA.
const Arch* pick_arch() {
  static_assert(168 % kAvx512MR == 0 && 120 % kAvx2MR == 0, "MC must be a multiple of MR");
  static const Arch avx512{kAvx512MR, kAvx512NR, 168, 384, 1024, micro_avx512_14x32,
                           micro_avx512_14x32_edge};
  static const Arch avx2{kAvx2MR, kAvx2NR, 120, 256, 2048, micro_avx2_6x16, nullptr};
  // EMBER_GEMM_ISA=avx2 or =scalar forces a narrower path (cpu_features.h).
  switch (simd_isa()) {
    case SimdIsa::avx512: return &avx512;
    case SimdIsa::avx2: return &avx2;
    case SimdIsa::none: break;
  }
  return nullptr;
}

// A 64-byte aligned float buffer that only grows (one per thread and operand). The threaded path
// grows its calling thread's buffers before its parallel region, so OutOfMemory reaches the caller.
class PackBuffer {
 public:
  ~PackBuffer() { std::free(data_); }
  float* get(int64_t n) {
    if (n > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (data_ == nullptr) {
        throw OutOfMemory(detail::str("gemm: could not allocate a ", bytes, "-byte packing buffer"));
      }
      capacity_ = n;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

thread_local PackBuffer tl_pack_a, tl_pack_b;

// One full 14-row sliver of non-transposed A on AVX-512: the 14 values of each k (one per row,
// lda apart) in one gather and one masked store, half the time of the scalar copy below.
// Requires 13 * lda < 2^31 (the gather's offsets are 32-bit).
__attribute__((target("avx512f"))) void pack_a_sliver_avx512(const float* src, int64_t lda,
                                                              int64_t kc, float* dst) {
  static_assert(kAvx512MR <= 16, "one gather per k");
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(int(lda)));
  const __mmask16 m = (1u << kAvx512MR) - 1;
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, rows, src + k, 4);
    _mm512_mask_storeu_ps(dst + k * kAvx512MR, m, v);
  }
}

// op(A)[i0 .. i0+mc, p0 .. p0+kc] into MR-tall slivers, each k-major (a[k * MR + i]), zero-padded.
// avx512: the AVX-512 micro-kernel runs (MR is kAvx512MR), so its sliver copy can too.
void pack_a(bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            int64_t MR, bool avx512, float* dst) {
  for (int64_t is = 0; is < mc; is += MR) {
    const int64_t mr = std::min(MR, mc - is);
    if (trans) {
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = A + (p0 + k) * lda + i0 + is;
        float* d = dst + k * MR;
        for (int64_t i = 0; i < mr; ++i) d[i] = src[i];
        for (int64_t i = mr; i < MR; ++i) d[i] = 0.0f;
      }
    } else {
      // k outer, rows inner: dst is written in order and the mr rows of A are read as mr
      // streams side by side (row by row it was 20 % slower at 1024^3).
      const float* src = A + (i0 + is) * lda + p0;
      if (avx512 && mr == MR && lda < (int64_t(1) << 31) / MR) {
        pack_a_sliver_avx512(src, lda, kc, dst);
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          float* d = dst + k * MR;
          for (int64_t i = 0; i < mr; ++i) d[i] = src[i * lda + k];
          for (int64_t i = mr; i < MR; ++i) d[i] = 0.0f;
        }
      }
    }
    dst += MR * kc;
  }
}

// One full 32-wide sliver of transposed B on AVX-512 (the rows of B are the sliver's columns):
// the 32 values of each k in two gathers and two stores, as pack_a_sliver_avx512 does for A.
// The scalar copy below was a third of a conv weight gradient (dy * col^T). Requires
// 31 * ldb < 2^31.
__attribute__((target("avx512f"))) void pack_b_sliver_trans_avx512(const float* src, int64_t ldb,
                                                                    int64_t kc, float* dst) {
  static_assert(kAvx512NR == 32, "two gathers per k");
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(int(ldb)));
  const float* upper = src + 16 * ldb;
  for (int64_t k = 0; k < kc; ++k) {
    _mm512_storeu_ps(dst + k * 32, _mm512_i32gather_ps(rows, src + k, 4));
    _mm512_storeu_ps(dst + k * 32 + 16, _mm512_i32gather_ps(rows, upper + k, 4));
  }
}

// op(B)[p0 .. p0+kc, j0 .. j0+nc] into NR-wide slivers, each k-major (b[k * NR + j]), zero-padded.
void pack_b(bool trans, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
            int64_t NR, float* dst) {
  if (!trans) {
    // Row by row of op(B), so that the source is read contiguously.
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + (p0 + k) * ldb + j0;
      float* d = dst + k * NR;
      int64_t js = 0;
      for (; js + NR <= nc; js += NR) {
        std::memcpy(d + js * kc, src + js, static_cast<size_t>(NR) * sizeof(float));
      }
      if (js < nc) {
        const int64_t nr = nc - js;
        for (int64_t j = 0; j < nr; ++j) d[js * kc + j] = src[js + j];
        for (int64_t j = nr; j < NR; ++j) d[js * kc + j] = 0.0f;
      }
    }
    return;
  }
  // NR == kAvx512NR: the AVX-512 micro-kernel runs, so this CPU has AVX-512.
  const bool gather = NR == kAvx512NR && ldb < (int64_t(1) << 31) / kAvx512NR;
  for (int64_t js = 0; js < nc; js += NR) {
    const int64_t nr = std::min(NR, nc - js);
    if (gather && nr == NR) {
      pack_b_sliver_trans_avx512(B + (j0 + js) * ldb + p0, ldb, kc, dst);
      dst += NR * kc;
      continue;
    }
    for (int64_t j = 0; j < nr; ++j) {
      const float* src = B + (j0 + js + j) * ldb + p0;
      for (int64_t k = 0; k < kc; ++k) dst[k * NR + j] = src[k];
    }
    for (int64_t j = nr; j < NR; ++j) {
      for (int64_t k = 0; k < kc; ++k) dst[k * NR + j] = 0.0f;
    }
    dst += NR * kc;
  }
}

// The packed product's operands, passed whole to the loops below.
struct Product {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
};

// One KC x NC panel of op(B): columns [jc, jc + nc), inner indices [pc, pc + kc).
struct Panel {
  int64_t jc, nc, pc, kc;
  float beta;  // the caller's beta on the first panel of K, then 1 (accumulate)
};

// C[i0 .. i0+mc, jc+j0 .. jc+j1) for one panel whose op(B) is packed in pb: packs op(A)'s rows
// into pa, then runs the micro-kernel over the MR x NR tiles. i0 and j0 are multiples of MR and
// NR, so a tile of C is computed the same way whichever call (and thread) covers it.
void panel_rows(const Arch& arch, const Product& p, const Panel& panel, int64_t i0, int64_t mc,
                int64_t j0, int64_t j1, const float* pb, float* pa) {
  const int64_t MR = arch.mr, NR = arch.nr, kc = panel.kc;
  pack_a(p.trans_a, p.A, p.lda, i0, mc, panel.pc, kc, MR, arch.kernel == micro_avx512_14x32, pa);
  alignas(64) float tile[16 * 32];
  static_assert(kAvx512MR * kAvx512NR <= 16 * 32 && kAvx2MR * kAvx2NR <= 16 * 32, "edge tile");
  auto tile_op = [&](int64_t ir, int64_t jr) {
    const int64_t mr = std::min(MR, mc - ir);
    const int64_t nr = std::min(NR, panel.nc - jr);
    const float* a = pa + ir * kc;
    const float* b = pb + jr * kc;
    float* c = p.C + (i0 + ir) * p.ldc + panel.jc + jr;
    if (mr == MR && nr == NR) {
      arch.kernel(kc, a, b, c, p.ldc, p.alpha, panel.beta);
    } else if (arch.edge_kernel) {
      arch.edge_kernel(kc, a, b, c, p.ldc, p.alpha, panel.beta, mr, nr);
    } else {
      arch.kernel(kc, a, b, tile, NR, 1.0f, 0.0f);
      for (int64_t i = 0; i < mr; ++i) {
        float* row = c + i * p.ldc;
        const float* t = tile + i * NR;
        if (panel.beta == 0.0f) {
          for (int64_t j = 0; j < nr; ++j) row[j] = p.alpha * t[j];
        } else {
          for (int64_t j = 0; j < nr; ++j) row[j] = p.alpha * t[j] + panel.beta * row[j];
        }
      }
    }
  };
  // The A sliver (MR x KC) stays in L1 while the B panel (KC x NC) streams from L2.
  for (int64_t ir = 0; ir < mc; ir += MR) {
    for (int64_t jr = j0; jr < j1; jr += NR) tile_op(ir, jr);
  }
}

// Calls body(panel) for each KC x NC panel of op(B), in the order every path uses.
template <class Body>
void for_each_panel(const Arch& arch, const Product& p, Body&& body) {
  for (int64_t jc = 0; jc < p.N; jc += arch.nc) {
    for (int64_t pc = 0; pc < p.K; pc += arch.kc) {
      body(Panel{jc, std::min(arch.nc, p.N - jc), pc, std::min(arch.kc, p.K - pc),
                 pc == 0 ? p.beta : 1.0f});
    }
  }
}

void packed_gemm_serial(const Arch& arch, const Product& p) {
  const int64_t kc_max = std::min(arch.kc, p.K);
  float* pa = tl_pack_a.get(std::min(arch.mc, (p.M + arch.mr - 1) / arch.mr * arch.mr) * kc_max);
  float* pb = tl_pack_b.get(std::min(arch.nc, (p.N + arch.nr - 1) / arch.nr * arch.nr) * kc_max);
  for_each_panel(arch, p, [&](const Panel& panel) {
    pack_b(p.trans_b, p.B, p.ldb, panel.pc, panel.kc, panel.jc, panel.nc, arch.nr, pb);
    for (int64_t ic = 0; ic < p.M; ic += arch.mc) {
      panel_rows(arch, p, panel, ic, std::min(arch.mc, p.M - ic), 0, panel.nc, pb, pa);
    }
  });
}

// Threads share each packed B panel (each packs a part of it) and then take tasks, a few MR-row
// slivers by a range of NR-wide columns, from a dynamic schedule: a thread slowed by the machine
// (on these shared VMs one vCPU is often stolen for milliseconds) takes fewer tasks instead of
// holding up the others, as a fixed split of C did (its 2-thread SGEMM reached 0.63 of peak
// against 0.70 on one thread). Tiles fall on the same MR x NR grid as the serial path, so the
// result is bit-for-bit the same for every thread count.
void packed_gemm_threads(const Arch& arch, const Product& p, int threads) {
  const int64_t MR = arch.mr, NR = arch.nr;
  const int64_t slivers_m = (p.M + MR - 1) / MR;
  // About 16 row tasks per thread (an uneven finish costs at most one), at most MC rows each.
  const int64_t task_slivers = std::clamp<int64_t>(slivers_m / (16 * threads), 1, arch.mc / MR);
  const int64_t row_tasks = (slivers_m + task_slivers - 1) / task_slivers;
  const int64_t kc_max = std::min(arch.kc, p.K);
  const int64_t nc_slivers = (std::min(arch.nc, p.N) + NR - 1) / NR;
  // Thin products (few row tasks) also split the columns, so that every thread has work.
  const int64_t col_tasks = std::min(nc_slivers, (4 * threads + row_tasks - 1) / row_tasks);
  // Both buffers are the calling thread's: B shared, A in one cache-line-aligned slice a thread.
  float* pb = tl_pack_b.get(nc_slivers * NR * kc_max);
  const int64_t a_slice = (task_slivers * MR * kc_max + 15) / 16 * 16;
  float* pa_slices = tl_pack_a.get(threads * a_slice);
#pragma omp parallel num_threads(threads)
  {
    float* pa = pa_slices + omp_get_thread_num() * a_slice;
    for_each_panel(arch, p, [&](const Panel& panel) {
      const int64_t slivers = (panel.nc + NR - 1) / NR;
      // Each thread packs an even share of the panel's slivers; the loop's barrier then
      // publishes the whole panel.
#pragma omp for schedule(static)
      for (int t = 0; t < threads; ++t) {
        const int64_t s0 = slivers * t / threads, s1 = slivers * (t + 1) / threads;
        if (s0 < s1) {
          pack_b(p.trans_b, p.B, p.ldb, panel.pc, panel.kc, panel.jc + s0 * NR,
                 std::min(panel.nc, s1 * NR) - s0 * NR, NR, pb + s0 * NR * panel.kc);
        }
      }
      const int64_t chunks = std::min(col_tasks, slivers);
      // The implicit barrier at the end keeps pb intact until every task of the panel is done.
#pragma omp for schedule(dynamic, 1)
      for (int64_t task = 0; task < row_tasks * chunks; ++task) {
        const int64_t i0 = task / chunks * task_slivers * MR, chunk = task % chunks;
        const int64_t j0 = slivers * chunk / chunks * NR;
        const int64_t j1 = std::min(panel.nc, slivers * (chunk + 1) / chunks * NR);
        panel_rows(arch, p, panel, i0, std::min(task_slivers * MR, p.M - i0), j0, j1, pb, pa);
      }
    });
  }
}

void packed_gemm(const Arch& arch, const Product& p) {
  const int threads = omp_in_parallel() ? 1 : get_num_threads();
  const double flops = 2.0 * double(p.M) * double(p.N) * double(p.K);
  if (threads > 1 && flops > 4e6) {
    packed_gemm_threads(arch, p, threads);
  } else {
    packed_gemm_serial(arch, p);
  }
}

// ---------------------------------------------------------------------------------------------
// Thin A * B^T (linear forward: [64, 320] * [10, 320]^T): with N <= 16 the packed path fills at
// most 16 of a 32-wide tile and packs both operands for a product of a few microseconds. Here
// both operands are read in place, rows of A and B being contiguous along k: each C[i, j] is a
// dot product, JB of them at a time in 16-lane accumulators, reduced at the end.

constexpr int64_t kThinMaxN = 16;

bool thin_nt_applies(const Arch& arch, bool trans_a, bool trans_b, int64_t M, int64_t N,
                     int64_t K) {
  // Single-threaded products only (packed_gemm threads above 4 MFLOP), on the AVX-512 path.
  // K >= 128: each dot ends in a horizontal reduction (about 8 instructions), which would
  // outweigh the K / 16 FMAs of a short dot product.
  return arch.mr == kAvx512MR && !trans_a && trans_b && N <= kThinMaxN && K >= 128 &&
         2.0 * double(M) * double(N) * double(K) <= 4e6;
}

// C[i, j0 + jj] for jj < JB (1..4): four dot products share each load of A's row.
template <int JB>
__attribute__((target("avx512f"))) void thin_nt_dots(int64_t K, float alpha, const float* a,
                                                     const float* B, int64_t ldb, int64_t j0,
                                                     float beta, float* c) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  const float* b = B + j0 * ldb;
  for (int64_t k = 0; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (K - k)) - 1);
    const __m512 av = _mm512_maskz_loadu_ps(m, a + k);
    s0 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, b + k), s0);
    if constexpr (JB > 1) s1 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, b + ldb + k), s1);
    if constexpr (JB > 2) s2 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, b + 2 * ldb + k), s2);
    if constexpr (JB > 3) s3 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, b + 3 * ldb + k), s3);
  }
  const __m512 sums[4] = {s0, s1, s2, s3};
  for (int jj = 0; jj < JB; ++jj) {
    const float dot = alpha * _mm512_reduce_add_ps(sums[jj]);
    // beta == 0 must not read C (it may hold NaN).
    c[j0 + jj] = beta == 0.0f ? dot : dot + beta * c[j0 + jj];
  }
}

void thin_nt_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    const float* a = A + i * lda;
    float* c = C + i * ldc;
    int64_t j = 0;
    for (; j + 4 <= N; j += 4) thin_nt_dots<4>(K, alpha, a, B, ldb, j, beta, c);
    switch (N - j) {
      case 3: thin_nt_dots<3>(K, alpha, a, B, ldb, j, beta, c); break;
      case 2: thin_nt_dots<2>(K, alpha, a, B, ldb, j, beta, c); break;
      case 1: thin_nt_dots<1>(K, alpha, a, B, ldb, j, beta, c); break;
      default: break;
    }
  }
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  assert(M >= 0 && N >= 0 && K >= 0);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    scale_rows<T>(M, N, beta, C, ldc);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (const Arch* arch = pick_arch()) {
      if (thin_nt_applies(*arch, trans_a, trans_b, M, N, K)) {
        thin_nt_gemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
      }
      packed_gemm(*arch, {trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc});
      return;
    }
  }
  simple_gemm<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch) {
  for (int64_t i = 0; i < batch; ++i) {
    gemm<T>(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
            C + i * stride_c, ldc);
  }
}

#define EMBER_INSTANTIATE(T)                                                                           \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, \
                        T, T*, int64_t);                                                               \
  template void gemm_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t,  \
                                const T*, int64_t, int64_t, T, T*, int64_t, int64_t, int64_t);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cpu
