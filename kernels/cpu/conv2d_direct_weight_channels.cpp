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

// Note [the weight gradient by output channels]. dw[k, c, r, q] = sum over images n and output
// positions (oh, ow) of dy[n, k, oh, ow] * x[n, c, S * oh + r, S * ow + q], stride S 1 or 2. Here a vector holds 16
// output channels k: dy is transposed per image to dyt[p, k] (p = oh * OW + ow), and each x value
// is broadcast. A register tile is KV <= 4 vectors of channels x NC (c, r) pairs x the 3 taps q of
// a kernel row: 24 accumulators, fed per output position by KV loads of dyt and 3 * NC broadcasts
// of x (KV 1: 25 loads for 24 FMAs; KV 4: 10), none of them split across cache lines or masked.
// Only real output positions are visited, so no lane is wasted on the input-width grid's columns
// ow >= OW (ResNet-8's 7x7 planes wasted 15 of 64 lanes there) and an x value is read only by
// the products the convolution has. The kernel of conv2d_direct_weight.cpp, vectorised over
// positions, ran at 27-35 % of the FMA peak on ResNet-8's 3x3 convs: its unaligned, masked x
// loads and the streaming of every dyg row from L2 for each tile were the cost.
//
// It applies when each group's output channels fill whole vectors (K / groups a multiple of 16)
// and the kernel is 3 wide, on AVX-512; other shapes keep the grid kernel. Padding is taken as the
// forward by output channels takes it: each image group's x, the channels of this thread's tasks,
// is copied with its zero border into the thread's scratch beside dyt, where it stays in L2. The
// whole batch padded into the workspace first (conv2d_direct_padded.cpp) had streamed 4-7 MB to
// memory and back per ResNet-8 conv: `pad_plane_avx512` was 6.5 % of its training step.
//
// A task is (group, k block, pair block), the pair block fastest. Images are taken in groups
// (kImageBudget) whose dyt a thread builds for the channels its tasks touch. Each weight is one
// lane of one accumulator: summed over the group's images and positions in order from zero, then
// added to the task's running sum, group after group, apart for each of the batch's fixed image
// shards (Note [image shards] in conv2d_direct_weight.cpp); dw is the shards' sums added in
// order. Where there are at least as many tasks as threads, threads take contiguous task ranges
// over both shards; where fewer (ResNet's stem, 1 -> 16 channels: one task), they take (shard,
// task) units, so that two threads sum the two halves of the batch. Either way the bits do not
// depend on the thread count.

constexpr int kTaps = 3;            // kernel_w
constexpr int kMaxVectors = 4;      // of 16 output channels, in one tile
constexpr int kAccumulators = 24;   // zmm registers a tile may hold sums in
constexpr int64_t kTileFloats = kAccumulators * 16;
// dyt + x floats of a group of images: 256 KB, in L2 (as the grid kernel's kGroupBudget).
constexpr int64_t kImageBudget = 65536;

constexpr int max_pairs(int vectors) { return kAccumulators / (vectors * kTaps); }  // 8, 4, 2, 2

struct Tasks {
  int64_t vectors, k_blocks, most_vectors, pairs, pair_blocks, count;  // all within one group
  explicit Tasks(const Conv2dShape& s)
      : vectors(s.group_out() / 16),
        k_blocks(direct_blocks(vectors, kMaxVectors)),
        most_vectors(direct_blocks(vectors, k_blocks)),
        pairs(s.group_in() * s.kernel_h),
        pair_blocks(direct_blocks(pairs, max_pairs(static_cast<int>(most_vectors)))),
        count(s.groups * k_blocks * pair_blocks) {}
};

// Task t as ranges: output channels [k0, k0 + 16 * vectors) of the whole tensor; (c, r) pairs
// [pair0, pair1) of its group, pair j being channel j / R of the group and kernel row j % R.
struct Tile {
  int64_t group, k0, vectors, pair0, pair1;
};

Tile tile_of(const Tasks& tasks, const Conv2dShape& s, int64_t t) {
  const int64_t pb = t % tasks.pair_blocks;
  t /= tasks.pair_blocks;
  const int64_t kb = t % tasks.k_blocks, group = t / tasks.k_blocks;
  const int64_t v0 = direct_block_start(tasks.vectors, tasks.k_blocks, kb);
  const int64_t v1 = direct_block_start(tasks.vectors, tasks.k_blocks, kb + 1);
  return {group, group * s.group_out() + 16 * v0, v1 - v0,
          direct_block_start(tasks.pairs, tasks.pair_blocks, pb),
          direct_block_start(tasks.pairs, tasks.pair_blocks, pb + 1)};
}

bool padded(const Conv2dShape& s) { return s.pad_h > 0 || s.pad_w > 0; }

// The plane the tiles read: x's, or x's with its zero border.
int64_t plane_rows(const Conv2dShape& s) { return s.in_h + 2 * s.pad_h; }
int64_t plane_width(const Conv2dShape& s) { return s.in_w + 2 * s.pad_w; }
int64_t plane_floats(const Conv2dShape& s) { return plane_rows(s) * plane_width(s); }

int64_t group_images(const Conv2dShape& s) {
  const int64_t per_image = s.out_h() * s.out_w() * s.out_channels + s.in_channels * plane_floats(s);
  return std::clamp<int64_t>(kImageBudget / per_image, 1, s.batch);
}

// A thread's scratch: dyt of an image group, its x planes with their border where s is padded
// (at most every channel), and its tasks' accumulators.
int64_t dyt_floats(const Conv2dShape& s) { return group_images(s) * s.out_h() * s.out_w() * s.out_channels; }
int64_t padded_x_floats(const Conv2dShape& s) {
  return padded(s) ? group_images(s) * s.in_channels * plane_floats(s) : 0;
}
int64_t scratch_floats(const Conv2dShape& s) { return dyt_floats(s) + padded_x_floats(s); }

// Threads that split the batch's image shards between them (fewer tasks than threads), else 0.
int shard_threads(const Conv2dShape& s, int64_t tasks, int threads) {
  if (threads == 1 || tasks >= threads || omp_in_parallel()) return 0;
  return static_cast<int>(std::min<int64_t>(threads, tasks * image_shard_count(s)));
}

// acc[v][i][q] += the products of U consecutive output positions from ow on (U <= 4 / KV dy
// vectors held), stride S: x[S * ow + j] is broadcast once for the products it has in these
// positions (position u, tap j - S * u), where one position alone broadcast 3 values for 3 * KV
// FMAs: with KV = 1 the loads, not the FMAs, had bound the loop. Each accumulator still takes
// its positions in order.
template <int KV, int NC, int U, int S>
__attribute__((target("avx512f"), always_inline)) inline void channel_positions(
    __m512 (&acc)[KV][NC][kTaps], const float* d_row, int64_t ld, const float* const (&x_rows)[NC],
    int64_t ow) {
  __m512 dy[U][KV];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 4
    for (int v = 0; v < KV; ++v) dy[u][v] = _mm512_loadu_ps(d_row + (ow + u) * ld + 16 * v);
#pragma GCC unroll 8
  for (int i = 0; i < NC; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < S * (U - 1) + kTaps; ++j) {
      const __m512 b = _mm512_set1_ps(x_rows[i][S * ow + j]);
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        const int q = j - S * u;
        if (q < 0 || q >= kTaps) continue;
#pragma GCC unroll 4
        for (int v = 0; v < KV; ++v) acc[v][i][q] = _mm512_fmadd_ps(dy[u][v], b, acc[v][i][q]);
      }
    }
  }
}

// sums[(v * NC + i) * kTaps + q] (vectors of 16) += the tile's products over `images` images:
// channel vector v of dyt (dyt + n * dyt_image + p * ld + 16 * v at position p) times
// x[n * x_image + offsets[i] + S * (oh * W + ow) + q], offsets[i] = c * plane + r * W of pair i
// (x's planes, or their copies with a border: W is the width of the plane read).
// The loops over v, i and q have constant bounds and are unrolled, so the arrays live in
// registers.
template <int KV, int NC, int S>
__attribute__((target("avx512f"))) void channel_tile_avx512(
    const float* dyt, int64_t dyt_image, int64_t ld, const float* x, int64_t x_image,
    const int64_t* offsets, int64_t images, int64_t OH, int64_t OW, int64_t W, float* sums) {
  constexpr int U = kMaxVectors / KV > 1 ? kMaxVectors / KV : 1;
  __m512 acc[KV][NC][kTaps];
#pragma GCC unroll 4
  for (int v = 0; v < KV; ++v)
#pragma GCC unroll 8
    for (int i = 0; i < NC; ++i)
#pragma GCC unroll 3
      for (int q = 0; q < kTaps; ++q) acc[v][i][q] = _mm512_setzero_ps();
  for (int64_t n = 0; n < images; ++n) {
    const float* d = dyt + n * dyt_image;
    const float* xn = x + n * x_image;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const float* x_rows[NC];
#pragma GCC unroll 8
      for (int i = 0; i < NC; ++i) x_rows[i] = xn + offsets[i] + S * oh * W;
      const float* d_row = d + oh * OW * ld;
      int64_t ow = 0;
      for (; ow + U <= OW; ow += U) channel_positions<KV, NC, U, S>(acc, d_row, ld, x_rows, ow);
      for (; ow < OW; ++ow) channel_positions<KV, NC, 1, S>(acc, d_row, ld, x_rows, ow);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < KV; ++v)
#pragma GCC unroll 8
    for (int i = 0; i < NC; ++i)
#pragma GCC unroll 3
      for (int q = 0; q < kTaps; ++q) {
        float* s = sums + ((v * NC + i) * kTaps + q) * 16;
        _mm512_storeu_ps(s, _mm512_add_ps(_mm512_loadu_ps(s), acc[v][i][q]));
      }
}

using TileFn = void (*)(const float*, int64_t, int64_t, const float*, int64_t, const int64_t*,
                        int64_t, int64_t, int64_t, int64_t, float*);

// kTiles[S - 1][KV - 1][NC - 1], null where KV * NC * 3 > kAccumulators.
template <int S, int KV, int... NC>
constexpr std::array<TileFn, 8> tile_row(std::integer_sequence<int, NC...>) {
  return {(NC + 1 <= max_pairs(KV) ? channel_tile_avx512<KV, std::min(NC + 1, max_pairs(KV)), S>
                                   : nullptr)...};
}
template <int S, int... KV>
constexpr std::array<std::array<TileFn, 8>, kMaxVectors> tile_table(
    std::integer_sequence<int, KV...>) {
  return {tile_row<S, KV + 1>(std::make_integer_sequence<int, 8>{})...};
}
constexpr std::array<std::array<std::array<TileFn, 8>, kMaxVectors>, 2> kTiles = {
    tile_table<1>(std::make_integer_sequence<int, kMaxVectors>{}),
    tile_table<2>(std::make_integer_sequence<int, kMaxVectors>{})};

// One step of a 16 x 16 transpose in registers: the B x B blocks off the diagonal of each 2B x 2B
// block swapped (rows i and i + B exchange their lanes j with j & B set). After B = 8, 4, 2, 1,
// row j holds column j.
template <int B>
constexpr std::array<int, 16> swap_index(bool top) {
  std::array<int, 16> index{};
  for (int j = 0; j < 16; ++j) {
    index[j] = (j & B) == 0 ? (top ? j : j + B) : (top ? 16 + j - B : 16 + j);
  }
  return index;
}
template <int B>
__attribute__((target("avx512f"))) void swap_blocks(__m512 (&rows)[16]) {
  static constexpr std::array<int, 16> kTop = swap_index<B>(true), kBottom = swap_index<B>(false);
  const __m512i top_index = _mm512_loadu_si512(kTop.data());
  const __m512i bottom_index = _mm512_loadu_si512(kBottom.data());
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    if ((i & B) != 0) continue;
    const __m512 top = rows[i], bottom = rows[i + B];
    rows[i] = _mm512_permutex2var_ps(top, top_index, bottom);
    rows[i + B] = _mm512_permutex2var_ps(top, bottom_index, bottom);
  }
}
__attribute__((target("avx512f"))) void transpose16(__m512 (&rows)[16]) {
  swap_blocks<8>(rows);
  swap_blocks<4>(rows);
  swap_blocks<2>(rows);
  swap_blocks<1>(rows);
}

}  // namespace

__attribute__((target("avx512f"))) void transpose16_block(const float* src, int64_t src_ld,
                                                          int64_t m, int64_t n, float* dst,
                                                          int64_t dst_ld) {
  const __mmask16 columns = direct_lanes16(n), rows_valid = direct_lanes16(m);
  __m512 rows[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    rows[j] = j < m ? _mm512_maskz_loadu_ps(columns, src + j * src_ld) : _mm512_setzero_ps();
  }
  transpose16(rows);
  for (int64_t i = 0; i < n; ++i) _mm512_mask_storeu_ps(dst + i * dst_ld, rows_valid, rows[i]);
}

namespace {

// dyt[i, p, k - k_lo] = dy[n0 + i, k, p] for images [n0, n0 + nb) and channels [k_lo, k_hi), a
// multiple of 16 of them: 16 x 16 blocks transposed in registers, the positions' tail masked.
__attribute__((target("avx512f"))) void build_dyt(const float* dy, float* dyt, int64_t n0,
                                                  int64_t nb, int64_t k_lo, int64_t k_hi,
                                                  const Conv2dShape& s) {
  const int64_t K = s.out_channels, P = s.out_h() * s.out_w(), ld = k_hi - k_lo;
  for (int64_t i = 0; i < nb; ++i) {
    for (int64_t k = k_lo; k < k_hi; k += 16) {
      const float* src = dy + ((n0 + i) * K + k) * P;
      float* dst = dyt + i * P * ld + (k - k_lo);
      for (int64_t p = 0; p < P; p += 16) {
        transpose16_block(src + p, P, 16, std::min<int64_t>(16, P - p), dst + p * ld, ld);
      }
    }
  }
}

struct PreparedTile {
  TileFn fn;
  int64_t dyt_offset;   // the tile's first channel within dyt's rows
  int64_t offsets[8];   // of each pair's kernel row r of channel c: (c - c_lo) * plane + r * width
};

// sums[(t - t0) * kTileFloats, ...) = task t's sums over images [n_begin, n_end), for tasks
// [t0, t1); ws holds scratch_floats(s).
void sum_tasks(const float* dy, const float* x, const Conv2dShape& s, const Tasks& tasks,
               int64_t t0, int64_t t1, int64_t n_begin, int64_t n_end, float* sums, float* ws) {
  if (t0 >= t1 || n_begin >= n_end) return;
  const int64_t G = group_images(s), HW = s.in_h * s.in_w, R = s.kernel_h;
  const int64_t W = plane_width(s), plane = plane_floats(s);  // of the plane the tiles read
  const int64_t OH = s.out_h(), OW = s.out_w(), P = OH * OW, Cg = s.group_in();
  const Tile first = tile_of(tasks, s, t0), last = tile_of(tasks, s, t1 - 1);
  const int64_t k_lo = first.k0, k_hi = last.k0 + 16 * last.vectors, ld = k_hi - k_lo;
  // The input channels [c_lo, c_hi) the tasks read: the only ones a padded x is copied for.
  int64_t c_lo = s.in_channels, c_hi = 0;
  for (int64_t t = t0; t < t1; ++t) {
    const Tile tile = tile_of(tasks, s, t);
    c_lo = std::min(c_lo, tile.group * Cg + tile.pair0 / R);
    c_hi = std::max(c_hi, tile.group * Cg + (tile.pair1 - 1) / R + 1);
  }
  if (!padded(s)) c_lo = 0;  // the tiles read x in place, every channel of an image
  std::vector<PreparedTile> prepared(static_cast<size_t>(t1 - t0));
  for (int64_t t = t0; t < t1; ++t) {
    const Tile tile = tile_of(tasks, s, t);
    PreparedTile& p = prepared[static_cast<size_t>(t - t0)];
    p.fn = kTiles[s.stride_h - 1][tile.vectors - 1][tile.pair1 - tile.pair0 - 1];
    p.dyt_offset = tile.k0 - k_lo;
    for (int64_t j = tile.pair0; j < tile.pair1; ++j) {
      p.offsets[j - tile.pair0] = (tile.group * Cg + j / R - c_lo) * plane + j % R * W;
    }
  }
  float* dyt = ws;
  float* x_padded = dyt + G * P * ld;
  std::fill(sums, sums + (t1 - t0) * kTileFloats, 0.0f);
  for (int64_t n0 = n_begin; n0 < n_end; n0 += G) {
    const int64_t nb = std::min(G, n_end - n0);
    build_dyt(dy, dyt, n0, nb, k_lo, k_hi, s);
    const float* x_group = x + n0 * s.in_channels * HW;
    int64_t x_image = s.in_channels * HW;
    if (padded(s)) {
      x_image = (c_hi - c_lo) * plane;
      for (int64_t i = 0; i < nb; ++i) {
        pad_planes(x_group + i * s.in_channels * HW + c_lo * HW, c_hi - c_lo, s.in_h, s.in_w,
                   s.pad_h, s.pad_w, x_padded + i * x_image);
      }
      x_group = x_padded;
    }
    float* tile_sums = sums;
    for (const PreparedTile& p : prepared) {
      p.fn(dyt + p.dyt_offset, P * ld, ld, x_group, x_image, p.offsets, nb, OH, OW, W, tile_sums);
      tile_sums += kTileFloats;
    }
  }
}

// dw's weights of tasks [t0, t1): the sums of shard 0 plus those of shard 1 (where the batch has
// two), shard_sums[i] + (t - t0) * kTileFloats holding shard i's sums of task t.
void store_tasks(const Conv2dShape& s, const Tasks& tasks, int64_t t0, int64_t t1,
                 const float* const* shard_sums, float* dw) {
  const int64_t R = s.kernel_h, Cg = s.group_in(), RQ = R * kTaps;
  const bool two = image_shard_count(s) == 2;
  for (int64_t t = t0; t < t1; ++t) {
    const Tile tile = tile_of(tasks, s, t);
    const float* a = shard_sums[0] + (t - t0) * kTileFloats;
    const float* a1 = two ? shard_sums[1] + (t - t0) * kTileFloats : nullptr;
    const int64_t NC = tile.pair1 - tile.pair0;
    for (int64_t v = 0; v < tile.vectors; ++v) {
      for (int64_t i = 0; i < NC; ++i) {
        const int64_t c = (tile.pair0 + i) / R, r = (tile.pair0 + i) % R;
        for (int64_t q = 0; q < kTaps; ++q) {
          const int64_t at = ((v * NC + i) * kTaps + q) * 16;
          for (int64_t l = 0; l < 16; ++l) {
            dw[(tile.k0 + 16 * v + l) * Cg * RQ + c * RQ + r * kTaps + q] =
                two ? a[at + l] + a1[at + l] : a[at + l];
          }
        }
      }
    }
  }
}

// Tasks [t0, t1) over both shards into dw; ws holds scratch_floats(s) and two shards' sums.
void run_tasks(const float* dy, const float* x, float* dw, const Conv2dShape& s,
               const Tasks& tasks, int64_t t0, int64_t t1, float* ws) {
  if (t0 >= t1) return;
  float* sums[2] = {ws + scratch_floats(s), ws + scratch_floats(s) + (t1 - t0) * kTileFloats};
  for (int64_t i = 0; i < image_shard_count(s); ++i) {
    sum_tasks(dy, x, s, tasks, t0, t1, image_shard_begin(s, i), image_shard_begin(s, i + 1),
              sums[i], ws);
  }
  store_tasks(s, tasks, t0, t1, sums, dw);
}

}  // namespace

bool channel_weight_grad_applies(const Conv2dShape& s) { return channel_kernels_take(s); }

int64_t channel_weight_grad_workspace(const Conv2dShape& s) {
  const int threads = get_num_threads();
  const int64_t count = Tasks(s).count;
  if (const int st = shard_threads(s, count, threads)) {
    return image_shard_count(s) * count * kTileFloats + st * scratch_floats(s);
  }
  return threads * (scratch_floats(s) + 2 * direct_blocks(count, threads) * kTileFloats);
}

void channel_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                         float* workspace) {
  const Tasks tasks(s);
  const int nt = get_num_threads();
  if (const int st = shard_threads(s, tasks.count, nt)) {
    // Unit u = (shard u / count, task u % count); each thread a contiguous range of units.
    const int64_t count = tasks.count, units = image_shard_count(s) * count;
    float* sums = workspace;
    float* scratch = sums + units * kTileFloats;
#pragma omp parallel num_threads(st)
    {
      const int64_t i = omp_get_thread_num(), u0 = units * i / st, u1 = units * (i + 1) / st;
      for (int64_t shard = u0 / count; shard * count < u1; ++shard) {
        const int64_t t0 = std::max(u0 - shard * count, int64_t(0));
        const int64_t t1 = std::min(u1 - shard * count, count);
        sum_tasks(dy, x, s, tasks, t0, t1, image_shard_begin(s, shard),
                  image_shard_begin(s, shard + 1), sums + (shard * count + t0) * kTileFloats,
                  scratch + i * scratch_floats(s));
      }
    }
    const float* shard_sums[2] = {sums, sums + count * kTileFloats};
    store_tasks(s, tasks, 0, count, shard_sums, dw);
    return;
  }
  if (nt == 1 || tasks.count < nt || omp_in_parallel()) {
    run_tasks(dy, x, dw, s, tasks, 0, tasks.count, workspace);
    return;
  }
  const int64_t slice = scratch_floats(s) + 2 * direct_blocks(tasks.count, nt) * kTileFloats;
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num();
    run_tasks(dy, x, dw, s, tasks, tasks.count * t / nt, tasks.count * (t + 1) / nt,
              workspace + t * slice);
  }
}

}  // namespace ember::kernels::cpu
