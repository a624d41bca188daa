#include "ember/kernels/cpu/conv2d_direct.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ember/kernels/cpu/cpu_features.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [the input-width grid]. With stride 1 and no padding, output (oh, ow) reads input
// (oh + r, ow + q), so at grid position p = oh * W + ow (W the *input* width) tap (r, q) reads
// x[p + r * W + q]: one contiguous run across output rows. The kernels compute every grid
// position p < direct_grid_len(s) = (OH - 1) * W + OW with full vectors along p, then keep the
// columns ow < OW. conv1 (W 28, OW 24) uses 86 % of the lanes this way and conv2 (W 12, OW 8) 67 %,
// against 75 % and 50 % when each output row is vectorised on its own. The largest index read,
// grid_len - 1 + (R - 1) * W + Q - 1, is H * W - 1: the last chunk's loads are masked, so no load
// leaves the image's plane. The grid of a block of output channels is written to a per-thread
// scratch and its valid columns are copied to y.
//
// Each task is (image, channel group, block of at most 10 of the group's output channels); the
// block's accumulators for two vectors of grid positions stay in registers over all C/groups *
// R * S taps of the group (20 zmm on AVX-512; on AVX2, with 16 ymm registers, one vector of 8).
// The weights are transposed first to wt[g][tap * K/groups + k], so a block's 10 weights of a
// tap are one short run to broadcast from. A grouped conv runs as one set of tasks, reading each
// group's channel slice of x and writing its slice of y in place: the earlier per-group calls
// copied every group's output out of a scratch and forked once per group (a quarter of a
// ResNeXt-style 3x3's time).

constexpr int kMaxBlock = 10;

// Taps of one output channel: its group's input channels times the kernel.
int64_t taps(const Conv2dShape& s) { return s.group_in() * s.kernel_h * s.kernel_w; }

// Accumulator j of vector v is a<v>_<j>: named variables, not an array (GCC keeps an array of
// __m512 on the stack, several times slower). EMBER_BLOCK(X) expands X(j) for the ten channels;
// the `if constexpr (KB > j)` inside X drops the unused ones.
#define EMBER_BLOCK(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)

// What the tiles of one block read of s, computed once per block (each tile had divided twice,
// in out_h() and out_w(), for the grid length). K and C are one channel group's.
struct TileGeometry {
  int64_t K, C, R, Q, W, HW, len;
};

TileGeometry tile_geometry(const Conv2dShape& s) {
  return {s.group_out(), s.group_in(), s.kernel_h, s.kernel_w, s.in_w, s.in_h * s.in_w,
          direct_grid_len(s)};
}

// Grid positions [p, p + 16 * NV) of channels [0, KB) of a block: out[j * ld + p'] = bias[j] +
// sum over taps of wt[tap * K + j] * x[p' + tap offset]. QT is the kernel width when it is a
// compile-time constant (3, 5: the inner loop unrolled, its loads at constant offsets), else 0.
// Masked tiles take the grid's last positions with masked loads; the others are whole vectors.
template <int KB, int NV, int QT, bool Masked>
__attribute__((target("avx512f"))) void tile_avx512(const float* x, const float* wt,
                                                     const float* bias, float* out, int64_t ld,
                                                     int64_t p, const TileGeometry& g) {
  const int64_t K = g.K, R = g.R, Q = QT > 0 ? QT : g.Q, W = g.W, HW = g.HW;
  const __mmask16 m0 = Masked ? direct_lanes16(g.len - p) : __mmask16(0xFFFF);
  const __mmask16 m1 = Masked && NV == 2 ? direct_lanes16(g.len - p - 16) : __mmask16(0xFFFF);
#define EMBER_INIT(j)                                                                          \
  __m512 a0_##j = _mm512_setzero_ps(), a1_##j = a0_##j;                                        \
  if constexpr (KB > j) {                                                                       \
    if (bias) a0_##j = a1_##j = _mm512_set1_ps(bias[j]);                                       \
  }
  EMBER_BLOCK(EMBER_INIT)
#undef EMBER_INIT
  for (int64_t c = 0; c < g.C; ++c) {
    const float* xc = x + c * HW + p;
    for (int64_t r = 0; r < R; ++r) {
#pragma GCC unroll 5
      for (int64_t q = 0; q < Q; ++q) {
        const float* xv = xc + r * W + q;
        const float* wv = wt + ((c * R + r) * Q + q) * K;
        const __m512 x0 = Masked ? _mm512_maskz_loadu_ps(m0, xv) : _mm512_loadu_ps(xv);
        const __m512 x1 = NV == 1  ? x0
                          : Masked ? _mm512_maskz_loadu_ps(m1, xv + 16)
                                   : _mm512_loadu_ps(xv + 16);
#define EMBER_FMA(j)                                                                           \
  if constexpr (KB > j) {                                                                       \
    const __m512 wj = _mm512_set1_ps(wv[j]);                                                    \
    a0_##j = _mm512_fmadd_ps(x0, wj, a0_##j);                                                   \
    if constexpr (NV == 2) a1_##j = _mm512_fmadd_ps(x1, wj, a1_##j);                            \
  }
        EMBER_BLOCK(EMBER_FMA)
#undef EMBER_FMA
      }
    }
  }
  // The scratch rows are padded to a multiple of 16: whole-vector stores stay inside them.
#define EMBER_STORE(j)                                                                         \
  if constexpr (KB > j) {                                                                       \
    _mm512_storeu_ps(out + j * ld + p, a0_##j);                                                 \
    if constexpr (NV == 2) _mm512_storeu_ps(out + j * ld + p + 16, a1_##j);                     \
  }
  EMBER_BLOCK(EMBER_STORE)
#undef EMBER_STORE
}

// The grid of one block at kernel width QT: whole tiles of two vectors, then one masked tile.
template <int KB, int QT>
__attribute__((target("avx512f"))) void block_tiles_avx512(const float* x, const float* wt,
                                                            const float* bias, float* out,
                                                            int64_t ld, const TileGeometry& g) {
  const int64_t end = g.len / 32 * 32;
  for (int64_t p = 0; p < end; p += 32) tile_avx512<KB, 2, QT, false>(x, wt, bias, out, ld, p, g);
  if (g.len - end > 16) {
    tile_avx512<KB, 2, QT, true>(x, wt, bias, out, ld, end, g);
  } else if (g.len > end) {
    tile_avx512<KB, 1, QT, true>(x, wt, bias, out, ld, end, g);
  }
}

// The first n (1..8) lanes, as the mask _mm256_maskload_ps takes.
__attribute__((target("avx2"))) inline __m256i lanes8(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::min<int64_t>(n, 8))), index);
}

// As tile_avx512 for grid positions [p, p + 8) (one ymm per channel).
template <int KB>
__attribute__((target("avx2,fma"))) void tile_avx2(const float* x, const float* wt,
                                                   const float* bias, float* out, int64_t ld,
                                                   int64_t p, const TileGeometry& g) {
  const int64_t K = g.K, R = g.R, Q = g.Q, W = g.W, HW = g.HW;
  const __m256i m = lanes8(g.len - p);
#define EMBER_INIT(j)                                                                          \
  __m256 a0_##j = _mm256_setzero_ps();                                                          \
  if constexpr (KB > j) {                                                                       \
    if (bias) a0_##j = _mm256_set1_ps(bias[j]);                                                 \
  }
  EMBER_BLOCK(EMBER_INIT)
#undef EMBER_INIT
  for (int64_t c = 0; c < g.C; ++c) {
    const float* xc = x + c * HW + p;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t q = 0; q < Q; ++q) {
        const __m256 x0 = _mm256_maskload_ps(xc + r * W + q, m);
        const float* wv = wt + ((c * R + r) * Q + q) * K;
#define EMBER_FMA(j) \
  if constexpr (KB > j) a0_##j = _mm256_fmadd_ps(x0, _mm256_set1_ps(wv[j]), a0_##j);
        EMBER_BLOCK(EMBER_FMA)
#undef EMBER_FMA
      }
    }
  }
#define EMBER_STORE(j) \
  if constexpr (KB > j) _mm256_storeu_ps(out + j * ld + p, a0_##j);
  EMBER_BLOCK(EMBER_STORE)
#undef EMBER_STORE
}

#undef EMBER_BLOCK

// The whole grid of one block into out (KB rows of direct_grid_ld(s)).
template <int KB>
void block_grid(DirectIsa isa, const float* x, const float* wt, const float* bias, float* out,
                const Conv2dShape& s) {
  const int64_t ld = direct_grid_ld(s);
  const TileGeometry g = tile_geometry(s);
  if (isa == DirectIsa::avx512) {
    switch (g.Q) {
      case 3: return block_tiles_avx512<KB, 3>(x, wt, bias, out, ld, g);
      case 5: return block_tiles_avx512<KB, 5>(x, wt, bias, out, ld, g);
      default: return block_tiles_avx512<KB, 0>(x, wt, bias, out, ld, g);
    }
  } else {
    for (int64_t p = 0; p < g.len; p += 8) tile_avx2<KB>(x, wt, bias, out, ld, p, g);
  }
}

void block_grid_any(int kb, DirectIsa isa, const float* x, const float* wt, const float* bias,
                    float* out, const Conv2dShape& s) {
  switch (kb) {
    case 1: return block_grid<1>(isa, x, wt, bias, out, s);
    case 2: return block_grid<2>(isa, x, wt, bias, out, s);
    case 3: return block_grid<3>(isa, x, wt, bias, out, s);
    case 4: return block_grid<4>(isa, x, wt, bias, out, s);
    case 5: return block_grid<5>(isa, x, wt, bias, out, s);
    case 6: return block_grid<6>(isa, x, wt, bias, out, s);
    case 7: return block_grid<7>(isa, x, wt, bias, out, s);
    case 8: return block_grid<8>(isa, x, wt, bias, out, s);
    case 9: return block_grid<9>(isa, x, wt, bias, out, s);
    default: return block_grid<10>(isa, x, wt, bias, out, s);
  }
}

// A group's output channels split into blocks of at most kMaxBlock, as even as possible
// (12 -> 6 + 6).
int64_t channel_blocks(const Conv2dShape& s) { return direct_blocks(s.group_out(), kMaxBlock); }

// Copies rows of `width` floats from src (row pitch src_ld) to dst (packed): masked vectors, since the
// rows are short (conv2: 8 floats) and a memcpy call per row was 3 % of the training step.
__attribute__((target("avx512f"))) void copy_rows_avx512(const float* src, int64_t src_ld,
                                                          float* dst, int64_t width,
                                                          int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < width; c += 16) {
      const __mmask16 m = direct_lanes16(width - c);
      _mm512_mask_storeu_ps(dst + r * width + c, m, _mm512_maskz_loadu_ps(m, src + r * src_ld + c));
    }
  }
}

// Task t = (image, group, block), block fastest: its grid, then its valid columns to y.
void forward_task(DirectIsa isa, int64_t t, const float* x, const float* wt, const float* bias,
                  float* y, const Conv2dShape& s, float* scratch) {
  const int64_t Kg = s.group_out(), nb = channel_blocks(s), b = t % nb;
  const int64_t group = t / nb % s.groups, n = t / nb / s.groups;
  // The block's first channel within its group, and its output channels [k0, k1) of y.
  const int64_t first = direct_block_start(Kg, nb, b);
  const int64_t k0 = group * Kg + first, k1 = group * Kg + direct_block_start(Kg, nb, b + 1);
  const int64_t OH = s.out_h(), OW = s.out_w(), W = s.in_w, ld = direct_grid_ld(s);
  const float* xg = x + (n * s.in_channels + group * s.group_in()) * s.in_h * W;
  const float* wg = wt + group * Kg * taps(s) + first;  // the group's transposed weights
  block_grid_any(int(k1 - k0), isa, xg, wg, bias ? bias + k0 : nullptr, scratch, s);
  for (int64_t k = k0; k < k1; ++k) {
    const float* g = scratch + (k - k0) * ld;
    float* yk = y + (n * s.out_channels + k) * OH * OW;
    if (isa == DirectIsa::avx512) {
      copy_rows_avx512(g, W, yk, OW, OH);
    } else {
      for (int64_t oh = 0; oh < OH; ++oh) {
        std::memcpy(yk + oh * OW, g + oh * W, static_cast<size_t>(OW) * sizeof(float));
      }
    }
  }
}

}  // namespace

DirectIsa direct_isa() {
  switch (simd_isa()) {
    case SimdIsa::avx512: return DirectIsa::avx512;
    case SimdIsa::avx2: return DirectIsa::avx2;
    case SimdIsa::none: break;
  }
  return DirectIsa::none;
}

bool direct_forward_applies(const Conv2dShape& s) {
  return (direct_isa() != DirectIsa::none && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 &&
          s.pad_w == 0 && s.dilation_h == 1 && s.dilation_w == 1) ||
         channel_forward_applies(s);
}

int64_t direct_forward_workspace(const Conv2dShape& s) {
  if (channel_forward_applies(s)) return channel_forward_workspace(s);
  return s.out_channels * taps(s) + int64_t(get_num_threads()) * kMaxBlock * direct_grid_ld(s);
}

void transpose_weights_by_tap(const float* w, const Conv2dShape& s, float* wt) {
  const int64_t Kg = s.group_out(), T = taps(s);
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t k = 0; k < Kg; ++k) {
      for (int64_t tap = 0; tap < T; ++tap) wt[(g * T + tap) * Kg + k] = w[(g * Kg + k) * T + tap];
    }
  }
}

void direct_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                    const Conv2dShape& s, float* workspace) {
  if (channel_forward_applies(s)) {
    channel_forward(x, w, bias_or_null, y, s, workspace);
    return;
  }
  transpose_weights_by_tap(w, s, workspace);
  const float* wt = workspace;
  float* scratch = workspace + s.out_channels * taps(s);
  const int64_t scratch_size = kMaxBlock * direct_grid_ld(s);
  const int64_t tasks = s.batch * s.groups * channel_blocks(s);
  const DirectIsa isa = direct_isa();
  const int nt = get_num_threads();
  if (nt == 1 || tasks < nt || omp_in_parallel()) {
    for (int64_t t = 0; t < tasks; ++t) forward_task(isa, t, x, wt, bias_or_null, y, s, scratch);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    float* mine = scratch + omp_get_thread_num() * scratch_size;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) forward_task(isa, t, x, wt, bias_or_null, y, s, mine);
  }
}

}  // namespace ember::kernels::cpu
