#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [the direct weight gradient]. dw[k, c, r, q] = sum over images n and grid positions p of
// dyg[n, k, p] * x[n, c, p + r * W + q], where dyg is dy laid out on the input-width grid (Note
// [the input-width grid] in conv2d_direct.cpp) with zeros in the columns ow >= OW. A register
// tile is KB <= 5 output channels x TB <= 5 taps (r, q) of one input channel, consecutive in
// r * Q + q (so a block may span kernel rows): 25 zmm accumulators of 16 grid positions each, fed
// per vector of positions by KB loads of dyg and TB loads of x, 10 loads for 25 FMAs. The earlier
// kernel held 10 channels x 1 tap (11 loads for 10 FMAs) and streamed the whole batch from L2
// once per tap: it was 43 % of the training step.
//
// A task is one tile position (channel group, k block, c, tap block), the k block and c within
// the group, so a grouped conv runs as one set of tasks on x and dy in place (no per-group copies
// of dy, one fork); tasks are split between threads, so each
// weight is summed by one thread in the same order whatever the thread count. Images are taken in
// groups (kGroupBudget) whose dyg (built per thread for the channels its tasks touch) and x stay
// in cache while every task of the thread runs over them; the tiles' accumulators are kept in the
// workspace between groups and reduced to one number each at the end.
//
// x is loaded with the mask of the grid's valid lanes (p < grid length and ow < OW), so columns
// that are not outputs read 0 and never a value outside the image's plane; 0 * 0 keeps them out
// of the sums even when x holds an infinity there.
//
// On AVX2 (16 ymm registers) the tile is at most 3 channels x 3 taps of 8 positions: 9
// accumulators, 3 x vectors and one dy vector.

constexpr int kMaxChannels = 5, kMaxTaps = 5;
// Floats a tile's accumulators take in the workspace: slot (j, t) at (j * kMaxTaps + t) * 16,
// on AVX2 the first 8 of each slot.
constexpr int64_t kTileFloats = kMaxChannels * kMaxTaps * 16;
constexpr int kAvx2Channels = 3, kAvx2Taps = 3;

struct TileLimits {
  int64_t channels, taps, lanes;
};
TileLimits tile_limits() {
  return direct_isa() == DirectIsa::avx512 ? TileLimits{kMaxChannels, kMaxTaps, 16}
                                           : TileLimits{kAvx2Channels, kAvx2Taps, 8};
}
// Floats of dyg + x a group of images may use: 256 KB, in L2. 128 KB was measured against 32 KB
// (the group in L1: conv2 took 2 images a group) and the whole batch: 20-30 % faster than either
// on the tutorial's conv2, the same on conv1 (one or four images); the accumulators' loads and
// stores and the calls are paid once a group. 256 KB then gave ResNet-8's 64-channel 7x7 conv
// (6 images a group instead of 3) 25-35 % and its 16- and 32-channel convs 5-10 %, the tutorial's
// the same.
constexpr int64_t kGroupBudget = 65536;


// The taps of an input channel, tap = r * Q + q, are taken in blocks of at most limits.taps
// across kernel rows: a 3x3 kernel's 9 taps in blocks of 4 and 5 (4 x 5 tiles: 9 loads for 20
// FMAs, where blocks of one row, 4 x 3, took 7 for 12). Each weight's sum is the same whatever
// tile holds it, so the blocking does not change the results.
struct Tasks {
  int64_t k_blocks, tap_blocks, count;  // k_blocks of one group
  explicit Tasks(const Conv2dShape& s, const TileLimits& limits = tile_limits())
      : k_blocks(direct_blocks(s.group_out(), limits.channels)),
        tap_blocks(direct_blocks(s.kernel_h * s.kernel_w, limits.taps)),
        count(s.groups * k_blocks * s.group_in() * tap_blocks) {}
};

// Task t = (group, k block, c, tap block) in that order (tap block fastest), as ranges: output
// channels [k0, k1) and input channel x_channel of the whole tensors, c within the group (dw's
// dim 1).
struct Tile {
  int64_t k0, k1, c, x_channel, tap0, tap1;
};

Tile tile_of(const Tasks& tasks, const Conv2dShape& s, int64_t t) {
  const int64_t RQ = s.kernel_h * s.kernel_w, Kg = s.group_out(), Cg = s.group_in();
  const int64_t tb = t % tasks.tap_blocks;
  t /= tasks.tap_blocks;
  const int64_t c = t % Cg;
  t /= Cg;
  const int64_t kb = t % tasks.k_blocks, group = t / tasks.k_blocks;
  return {group * Kg + direct_block_start(Kg, tasks.k_blocks, kb),
          group * Kg + direct_block_start(Kg, tasks.k_blocks, kb + 1),
          c,
          group * Cg + c,
          direct_block_start(RQ, tasks.tap_blocks, tb),
          direct_block_start(RQ, tasks.tap_blocks, tb + 1)};
}

int64_t group_images(const Conv2dShape& s) {
  const int64_t per_image = s.out_channels * direct_grid_ld(s) + s.in_channels * s.in_h * s.in_w;
  return std::clamp<int64_t>(kGroupBudget / per_image, 1, s.batch);
}

int64_t thread_floats(const Conv2dShape& s, int threads) {
  const int64_t tasks = Tasks(s).count, most_tasks = direct_blocks(tasks, threads);
  return group_images(s) * s.out_channels * direct_grid_ld(s) + most_tasks * kTileFloats;
}

// Accumulator (j, t) of the tile is a<j>_<t>: named variables, not an array (GCC keeps an array
// of __m512 on the stack). EMBER_TILE(X) expands X(j, t) for the 25 places; `if constexpr`
// inside X drops those beyond KB x TB.
#define EMBER_TILE(X)                                                                          \
  X(0, 0) X(0, 1) X(0, 2) X(0, 3) X(0, 4) X(1, 0) X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(2, 0)       \
  X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(3, 0) X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(4, 0) X(4, 1)       \
  X(4, 2) X(4, 3) X(4, 4)
#define EMBER_TAPS(X) X(0) X(1) X(2) X(3) X(4)
#define EMBER_TILE3(X) X(0, 0) X(0, 1) X(0, 2) X(1, 0) X(1, 1) X(1, 2) X(2, 0) X(2, 1) X(2, 2)
#define EMBER_TAPS3(X) X(0) X(1) X(2)

// acc (KB x TB vectors, slot j * kMaxTaps + t) = (first ? 0 : acc) + the tile's products over
// `images` images. The dyg rows of the KB channels are dyg + n * dyg_image + j * ld; tap t reads
// x + n * x_image + offsets[t] + p at grid position p (x already offset to channel c's plane;
// offsets[t] = r * W + q of the tile's t-th tap).
template <int KB, int TB>
__attribute__((target("avx512f"))) void tile_avx512(const float* dyg, int64_t dyg_image,
                                                     int64_t ld, const float* x, int64_t x_image,
                                                     const int64_t* offsets, int64_t images,
                                                     const void* lane_masks, bool first,
                                                     float* acc) {
  const auto* masks = static_cast<const __mmask16*>(lane_masks);
#define EMBER_OFFSET(t) const int64_t off##t = TB > t ? offsets[t] : 0;
  EMBER_TAPS(EMBER_OFFSET)
#undef EMBER_OFFSET
#define EMBER_LOAD(j, t)                                                                       \
  __m512 a##j##_##t = _mm512_setzero_ps();                                                      \
  if constexpr (KB > j && TB > t) {                                                             \
    if (!first) a##j##_##t = _mm512_loadu_ps(acc + (j * kMaxTaps + t) * 16);                   \
  }
  EMBER_TILE(EMBER_LOAD)
#undef EMBER_LOAD
  const int64_t chunks = ld / 16;
  for (int64_t n = 0; n < images; ++n) {
    const float* d = dyg + n * dyg_image;
    const float* xn = x + n * x_image;
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t p = i * 16;
      const __mmask16 m = masks[i];
#define EMBER_X(t)                                                                             \
  __m512 x##t = _mm512_setzero_ps();                                                            \
  if constexpr (TB > t) x##t = _mm512_maskz_loadu_ps(m, xn + p + off##t);
      EMBER_TAPS(EMBER_X)
#undef EMBER_X
      // Channel j's dyg vector is loaded in the first tap's FMA of row j and reused by the rest.
      // The empty asm pins it in a register: GCC otherwise folds the load into every FMA of the
      // row (KB * TB loads instead of KB), which made this loop load-bound at half its speed.
#define EMBER_FMA(j, t)                                                                        \
  if constexpr (KB > j && TB > t) {                                                             \
    if constexpr (t == 0) {                                                                     \
      dy##j = _mm512_loadu_ps(d + j * ld + p);                                                  \
      asm("" : "+v"(dy##j));                                                                    \
    }                                                                                           \
    a##j##_##t = _mm512_fmadd_ps(dy##j, x##t, a##j##_##t);                                      \
  }
      __m512 dy0 = _mm512_setzero_ps(), dy1 = dy0, dy2 = dy0, dy3 = dy0, dy4 = dy0;
      EMBER_TILE(EMBER_FMA)
#undef EMBER_FMA
    }
  }
#define EMBER_STORE(j, t) \
  if constexpr (KB > j && TB > t) _mm512_storeu_ps(acc + (j * kMaxTaps + t) * 16, a##j##_##t);
  EMBER_TILE(EMBER_STORE)
#undef EMBER_STORE
}

#undef EMBER_TAPS
#undef EMBER_TILE

// As tile_avx512 with vectors of 8 positions (KB, TB <= 3); lane_masks holds one int32 per grid
// position (-1 valid, 0 not), the form _mm256_maskload_ps takes.
template <int KB, int TB>
__attribute__((target("avx2,fma"))) void tile_avx2(const float* dyg, int64_t dyg_image,
                                                   int64_t ld, const float* x, int64_t x_image,
                                                   const int64_t* offsets, int64_t images,
                                                   const void* lane_masks, bool first, float* acc) {
  const auto* masks = static_cast<const int32_t*>(lane_masks);
#define EMBER_OFFSET(t) const int64_t off##t = TB > t ? offsets[t] : 0;
  EMBER_TAPS3(EMBER_OFFSET)
#undef EMBER_OFFSET
#define EMBER_LOAD(j, t)                                                                       \
  __m256 a##j##_##t = _mm256_setzero_ps();                                                      \
  if constexpr (KB > j && TB > t) {                                                             \
    if (!first) a##j##_##t = _mm256_loadu_ps(acc + (j * kMaxTaps + t) * 16);                   \
  }
  EMBER_TILE3(EMBER_LOAD)
#undef EMBER_LOAD
  const int64_t chunks = ld / 8;
  for (int64_t n = 0; n < images; ++n) {
    const float* d = dyg + n * dyg_image;
    const float* xn = x + n * x_image;
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t p = i * 8;
      const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(masks + p));
#define EMBER_X(t)                                                                             \
  __m256 x##t = _mm256_setzero_ps();                                                            \
  if constexpr (TB > t) x##t = _mm256_maskload_ps(xn + p + off##t, m);
      EMBER_TAPS3(EMBER_X)
#undef EMBER_X
#define EMBER_FMA(j, t)                                                                        \
  if constexpr (KB > j && TB > t) {                                                             \
    if constexpr (t == 0) {                                                                     \
      dy##j = _mm256_loadu_ps(d + j * ld + p);                                                  \
      asm("" : "+v"(dy##j));                                                                    \
    }                                                                                           \
    a##j##_##t = _mm256_fmadd_ps(dy##j, x##t, a##j##_##t);                                      \
  }
      __m256 dy0 = _mm256_setzero_ps(), dy1 = dy0, dy2 = dy0;
      EMBER_TILE3(EMBER_FMA)
#undef EMBER_FMA
    }
  }
#define EMBER_STORE(j, t) \
  if constexpr (KB > j && TB > t) _mm256_storeu_ps(acc + (j * kMaxTaps + t) * 16, a##j##_##t);
  EMBER_TILE3(EMBER_STORE)
#undef EMBER_STORE
}

#undef EMBER_TAPS3
#undef EMBER_TILE3

using TileFn = void (*)(const float*, int64_t, int64_t, const float*, int64_t, const int64_t*,
                        int64_t, const void*, bool, float*);

template <int KB, int... TB>
constexpr std::array<TileFn, kMaxTaps> tile_row(std::integer_sequence<int, TB...>) {
  return {tile_avx512<KB, TB + 1>...};
}

// kTiles[KB - 1][TB - 1].
template <int... KB>
constexpr std::array<std::array<TileFn, kMaxTaps>, kMaxChannels> tile_table(
    std::integer_sequence<int, KB...>) {
  return {tile_row<KB + 1>(std::make_integer_sequence<int, kMaxTaps>{})...};
}
constexpr auto kTiles = tile_table(std::make_integer_sequence<int, kMaxChannels>{});

constexpr TileFn kTilesAvx2[kAvx2Channels][kAvx2Taps] = {
    {tile_avx2<1, 1>, tile_avx2<1, 2>, tile_avx2<1, 3>},
    {tile_avx2<2, 1>, tile_avx2<2, 2>, tile_avx2<2, 3>},
    {tile_avx2<3, 1>, tile_avx2<3, 2>, tile_avx2<3, 3>}};

TileFn tile_fn(const Tile& tile) {
  const int64_t kb = tile.k1 - tile.k0 - 1, tb = tile.tap1 - tile.tap0 - 1;
  return direct_isa() == DirectIsa::avx512 ? kTiles[kb][tb] : kTilesAvx2[kb][tb];
}

// Floats at the workspace's start that hold the lane masks: one __mmask16 per 16 grid positions
// (AVX-512) or one int32 per position (AVX2), kept a multiple of 16 floats.
int64_t mask_floats(const Conv2dShape& s) {
  const int64_t ld = direct_grid_ld(s);
  const int64_t bytes = direct_isa() == DirectIsa::avx512 ? ld / 16 * int64_t(sizeof(__mmask16))
                                                          : ld * int64_t(sizeof(int32_t));
  return (bytes + 63) / 64 * 16;
}

bool valid_lane(const Conv2dShape& s, int64_t p) {
  return p < direct_grid_len(s) && p % s.in_w < s.out_w();
}

// The valid lanes of the grid (p < grid length and ow < OW) in the form this ISA's tile loads.
void write_lane_masks(const Conv2dShape& s, void* out) {
  const int64_t ld = direct_grid_ld(s);
  if (direct_isa() == DirectIsa::avx512) {
    auto* masks = static_cast<__mmask16*>(out);
    for (int64_t i = 0; i < ld / 16; ++i) {
      unsigned bits = 0;
      for (int l = 0; l < 16; ++l) bits |= valid_lane(s, 16 * i + l) ? 1u << l : 0u;
      masks[i] = __mmask16(bits);
    }
  } else {
    auto* masks = static_cast<int32_t*>(out);
    for (int64_t p = 0; p < ld; ++p) masks[p] = valid_lane(s, p) ? -1 : 0;
  }
}

// dyg[i, k - k_lo, :] for images [n0, n0 + nb), channels [k_lo, k_hi): dy on the grid, zeros
// in the columns ow >= OW and past the grid's length. Rows are a few floats (conv2: 8), so they
// are moved with masked vectors rather than memcpy / memset calls.
// (The last grid row may end before W: ld can be < OH * W; `keep` stops there.)
__attribute__((target("avx512f"))) void build_dy_grid_avx512(const float* dy, float* dyg,
                                                             int64_t n0, int64_t nb, int64_t k_lo,
                                                             int64_t k_hi, const Conv2dShape& s) {
  const int64_t K = s.out_channels, OH = s.out_h(), OW = s.out_w(), W = s.in_w;
  const int64_t ld = direct_grid_ld(s);
  for (int64_t i = 0; i < nb; ++i) {
    for (int64_t k = k_lo; k < k_hi; ++k) {
      const float* src = dy + ((n0 + i) * K + k) * OH * OW;
      float* dst = dyg + (i * (k_hi - k_lo) + k - k_lo) * ld;
      // Each grid row of W floats in one pass: dy's OW values, then zeros.
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t c = 0; c < W && oh * W + c < ld; c += 16) {
          const __mmask16 keep = direct_lanes16(std::min(W, ld - oh * W) - c);
          const __mmask16 valid = c < OW ? direct_lanes16(OW - c) : __mmask16(0);
          _mm512_mask_storeu_ps(dst + oh * W + c, keep,
                                _mm512_maskz_loadu_ps(valid & keep, src + oh * OW + c));
        }
      }
      for (int64_t p = OH * W; p < ld; ++p) dst[p] = 0.0f;
    }
  }
}

void build_dy_grid(const float* dy, float* dyg, int64_t n0, int64_t nb, int64_t k_lo,
                   int64_t k_hi, const Conv2dShape& s) {
  if (direct_isa() == DirectIsa::avx512) return build_dy_grid_avx512(dy, dyg, n0, nb, k_lo, k_hi, s);
  const int64_t K = s.out_channels, OH = s.out_h(), OW = s.out_w(), W = s.in_w;
  const int64_t ld = direct_grid_ld(s);
  for (int64_t i = 0; i < nb; ++i) {
    for (int64_t k = k_lo; k < k_hi; ++k) {
      const float* src = dy + ((n0 + i) * K + k) * OH * OW;
      float* dst = dyg + (i * (k_hi - k_lo) + k - k_lo) * ld;
      std::fill(dst, dst + ld, 0.0f);
      for (int64_t oh = 0; oh < OH; ++oh) std::copy(src + oh * OW, src + (oh + 1) * OW, dst + oh * W);
    }
  }
}

// The sum of the lanes (16, or 8 on AVX2) as a tree in a fixed order: lane l + lane l + half, for
// half = lanes / 2 down to 1.
float lane_tree(const float* v, int64_t lanes) {
  float part[16];
  std::copy(v, v + lanes, part);
  for (int64_t half = lanes / 2; half >= 1; half /= 2) {
    for (int64_t l = 0; l < half; ++l) part[l] += part[l + half];
  }
  return part[0];
}

// lane_tree(v, 16) in vectors, the same additions in the same order (bit for bit): the scalar
// tree over 5,000 weights' 16 lanes each was 8 % of conv2's weight gradient, and the image shards
// take it once a shard.
__attribute__((target("avx512f"))) float lane_tree16(const float* v) {
  const __m512 all = _mm512_loadu_ps(v);
  const __m256 eight = _mm256_add_ps(_mm512_castps512_ps256(all),
                                     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(all), 1)));
  __m128 four = _mm_add_ps(_mm256_castps256_ps128(eight), _mm256_extractf128_ps(eight, 1));
  four = _mm_add_ps(four, _mm_movehl_ps(four, four));                // lanes 0 + 2, 1 + 3
  return _mm_cvtss_f32(_mm_add_ss(four, _mm_shuffle_ps(four, four, 1)));  // (0 + 2) + (1 + 3)
}

// A task as its tile calls take it, worked out once per pass: tile_of's divisions, taken again for
// every task of every image group, were a fifth of the weight gradient of ResNet-8's 64-channel
// 7x7 conv (1664 tasks, 19 groups, a few hundred cycles of FMAs a call).
struct PreparedTile {
  TileFn fn;
  int64_t dyg_offset, x_offset;  // the tile's first dyg row within a group; its x plane in image 0
  int64_t offsets[kMaxTaps];     // r * W + q of each tap
};

// Tasks [t0, t1) over the whole batch into dw; ws holds thread_floats of the caller's count.
void run_tasks(const float* dy, const float* x, float* dw, const Conv2dShape& s,
               const Tasks& tasks, int64_t t0, int64_t t1, const void* masks, float* ws) {
  if (t0 >= t1) return;
  const int64_t ld = direct_grid_ld(s), G = group_images(s);
  const int64_t C = s.in_channels, HW = s.in_h * s.in_w, W = s.in_w, Q = s.kernel_w;
  const int64_t k_lo = tile_of(tasks, s, t0).k0, k_hi = tile_of(tasks, s, t1 - 1).k1;
  const int64_t dyg_image = (k_hi - k_lo) * ld;
  std::vector<PreparedTile> prepared(static_cast<size_t>(t1 - t0));
  for (int64_t t = t0; t < t1; ++t) {
    const Tile tile = tile_of(tasks, s, t);
    PreparedTile& p = prepared[static_cast<size_t>(t - t0)];
    p.fn = tile_fn(tile);
    p.dyg_offset = (tile.k0 - k_lo) * ld;
    p.x_offset = tile.x_channel * HW;
    for (int64_t tap = tile.tap0; tap < tile.tap1; ++tap) {
      p.offsets[tap - tile.tap0] = tap / Q * W + tap % Q;
    }
  }
  float* dyg = ws;
  float* acc = ws + G * s.out_channels * ld;
  for (int64_t n0 = 0; n0 < s.batch; n0 += G) {
    const int64_t nb = std::min(G, s.batch - n0);
    build_dy_grid(dy, dyg, n0, nb, k_lo, k_hi, s);
    const float* x_group = x + n0 * C * HW;
    float* tile_acc = acc;
    for (const PreparedTile& p : prepared) {
      p.fn(dyg + p.dyg_offset, dyg_image, ld, x_group + p.x_offset, C * HW, p.offsets, nb, masks, n0 == 0,
           tile_acc);
      tile_acc += kTileFloats;
    }
  }
  const int64_t CRQ = s.group_in() * s.kernel_h * s.kernel_w, lanes = tile_limits().lanes;
  for (int64_t t = t0; t < t1; ++t) {
    const Tile tile = tile_of(tasks, s, t);
    const float* a = acc + (t - t0) * kTileFloats;
    for (int64_t k = tile.k0; k < tile.k1; ++k) {
      for (int64_t tap = tile.tap0; tap < tile.tap1; ++tap) {
        const float* v = a + ((k - tile.k0) * kMaxTaps + tap - tile.tap0) * 16;
        dw[k * CRQ + tile.c * s.kernel_h * s.kernel_w + tap] = lanes == 16 ? lane_tree16(v) : lane_tree(v, lanes);
      }
    }
  }
}

// Note [image shards]. The batch is summed as kImageShards fixed halves, each into its own copy
// of dw (the first into dw itself), added in order at the end, whatever the thread count: with
// two threads each takes one half of the images and every task, so it reads only the images that
// its own core's forward and pooling kernels wrote (they split by images too). Split by tasks, as
// before, both threads read the whole of x and dy: on these VMs, when the host runs the two vCPUs
// on cores that share no L3, those reads and the invalidations the next step's writes then need
// cost a round trip of ~320 ns a cache line, and the tutorial's 2-thread step went from 1.5 to
// 2.5 ms (docs/performance.md, "Two threads on the tutorial network"). More threads split each
// half's tasks between them, so the bits stay the same for every thread count.
// kImageShards, image_shard_count and image_shard_begin are in conv2d_direct.h: bias_grad in
// conv2d.cpp splits the batch the same way.
int64_t dw_floats(const Conv2dShape& s) { return s.out_channels * s.group_in() * s.kernel_h * s.kernel_w; }

// The threads that share shard i when `threads` of them run (threads >= shards): [first, last).
std::pair<int, int> shard_team(int64_t i, int threads, int64_t shards) {
  int first = 0;
  while (first * shards / threads < i) ++first;
  int last = first;
  while (last < threads && last * shards / threads == i) ++last;
  return {first, last};
}

// The smallest team any shard gets, which sizes each thread's share of the tiles.
int smallest_team(int threads, int64_t shards) {
  return threads < shards ? 1 : int(threads / shards);
}

}  // namespace

bool direct_weight_grad_applies(const Conv2dShape& s) {
  return (direct_isa() != DirectIsa::none && s.stride_h == 1 && s.stride_w == 1 &&
          s.pad_h == 0 && s.pad_w == 0 && s.dilation_h == 1 && s.dilation_w == 1) ||
         channel_weight_grad_applies(s);
}

int64_t direct_weight_grad_workspace(const Conv2dShape& s) {
  if (channel_weight_grad_applies(s)) return channel_weight_grad_workspace(s);
  const int threads = get_num_threads();
  return mask_floats(s) + (image_shard_count(s) - 1) * dw_floats(s) +
         int64_t(threads) * thread_floats(s, smallest_team(threads, image_shard_count(s)));
}

void direct_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                        float* workspace) {
  if (channel_weight_grad_applies(s)) return channel_weight_grad(dy, x, dw, s, workspace);
  const Tasks tasks(s);
  void* masks = workspace;
  write_lane_masks(s, masks);
  workspace += mask_floats(s);
  // Note [image shards]: shard i's images go into its own dw.
  const int64_t shards = image_shard_count(s), dw_size = dw_floats(s);
  float* partials = workspace;  // shards 1.. (shard 0 writes dw)
  workspace += (shards - 1) * dw_size;
  const int64_t dy_image = s.out_channels * s.out_h() * s.out_w(), x_image = s.in_channels * s.in_h * s.in_w;
  auto run_shard = [&](int64_t i, int64_t t0, int64_t t1, float* ws) {
    Conv2dShape part = s;
    part.batch = image_shard_begin(s, i + 1) - image_shard_begin(s, i);
    run_tasks(dy + image_shard_begin(s, i) * dy_image, x + image_shard_begin(s, i) * x_image,
              i == 0 ? dw : partials + (i - 1) * dw_size, part, tasks, t0, t1, masks, ws);
  };
  auto run_all_shards = [&] {
    for (int64_t i = 0; i < shards; ++i) run_shard(i, 0, tasks.count, workspace);
  };
  const int nt = get_num_threads();
  if (nt < shards || omp_in_parallel()) {
    run_all_shards();
  } else {
    const int64_t slice = thread_floats(s, smallest_team(nt, shards));
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num();
      if (omp_get_num_threads() < nt) {  // a smaller team than asked for (OMP_DYNAMIC): one thread does all
        if (t == 0) run_all_shards();
      } else {
        const int64_t i = int64_t(t) * shards / nt;
        const auto [first, last] = shard_team(i, nt, shards);
        const int64_t rank = t - first, team = last - first;
        run_shard(i, tasks.count * rank / team, tasks.count * (rank + 1) / team, workspace + t * slice);
      }
    }
  }
  for (int64_t i = 1; i < shards; ++i) {
    const float* part = partials + (i - 1) * dw_size;
    for (int64_t j = 0; j < dw_size; ++j) dw[j] += part[j];
  }
}

}  // namespace ember::kernels::cpu
