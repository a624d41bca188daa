#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [the forward by output channels]. y[k, oh, ow] = bias[k] + sum over c, r, q of
// w[k, c, r, q] * x[c, S * oh + r, S * ow + q] (S the stride, x with its zero border). Here a vector
// holds 16 output channels: the weights are transposed to wt[tap, k] (transpose_weights_by_tap)
// and each x value is broadcast. A register tile is KV <= 3 vectors of channels x U consecutive
// positions of one output row; per (c, r) it loads the 3 taps' KV weight vectors and broadcasts
// the S * (U - 1) + 3 values of x the row segment reads, each into every product that uses it
// (as the weight gradient by output channels does): KV 1, U 14, S 1: 19 loads for 42 FMAs.
// Within one output row the x values lie at constant offsets from one pointer, so the
// broadcasts need no address arithmetic.
//
// The grid kernel of conv2d_direct.cpp, vectorised over positions of the input-width grid, lost
// lanes on ResNet-8's narrow planes (7x7: 15 of 64 lanes, and a masked tail per chunk) and could
// not take a stride; this one wastes no lane and takes strides 1 and 2, so ResNet's strided 3x3
// convs leave im2col + gemm. The tile's sums are stored position-major to a per-thread scratch
// yt[p, 16 * KV] and the plane is transposed to y 16 x 16 at a time.
//
// A task is (image, group, block of at most kMaxVectors of the group's channel vectors); each
// output is summed by one task in the order c, r, q, as the grid kernel's are (the same bits).

constexpr int kTaps = 3;        // kernel_w
constexpr int kMaxVectors = 3;  // of 16 output channels, in one tile

// Positions a tile of KV vectors holds: KV * U accumulators, 3 * KV weights and one broadcast
// within the 32 zmm registers.
constexpr int max_positions(int vectors) { return vectors == 1 ? 14 : vectors == 2 ? 9 : 7; }
constexpr int kMaxPositions = max_positions(1);

// out[u * ld + 16 * v + l] = bias + the tile's sums for output position u of the segment and
// channel 16 * v + l of the block. x points at the segment's first input (channel 0, row S * oh,
// column S * ow0); wt at the block's first channel of tap 0, taps Kg apart.
template <int KV, int U, int S>
__attribute__((target("avx512f"))) void channel_row_tile(const float* x, int64_t HW, int64_t W,
                                                         int64_t C, int64_t R, const float* wt,
                                                         int64_t Kg, const float* bias,
                                                         float* out, int64_t ld) {
  __m512 acc[KV][U];
#pragma GCC unroll 3
  for (int v = 0; v < KV; ++v) {
    const __m512 init = bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 14
    for (int u = 0; u < U; ++u) acc[v][u] = init;
  }
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t r = 0; r < R; ++r) {
      const float* xr = x + c * HW + r * W;
      const float* wr = wt + (c * R + r) * kTaps * Kg;
      __m512 w[kTaps][KV];
#pragma GCC unroll 3
      for (int q = 0; q < kTaps; ++q)
#pragma GCC unroll 3
        for (int v = 0; v < KV; ++v) w[q][v] = _mm512_loadu_ps(wr + q * Kg + 16 * v);
      // Input j of the segment feeds position u through tap q = j - S * u.
#pragma GCC unroll 30
      for (int j = 0; j < S * (U - 1) + kTaps; ++j) {
        const __m512 b = _mm512_set1_ps(xr[j]);
#pragma GCC unroll 3
        for (int q = 0; q < kTaps; ++q) {
          if (j < q || (j - q) % S != 0 || (j - q) / S >= U) continue;
          const int u = (j - q) / S;
#pragma GCC unroll 3
          for (int v = 0; v < KV; ++v) acc[v][u] = _mm512_fmadd_ps(w[q][v], b, acc[v][u]);
        }
      }
    }
  }
#pragma GCC unroll 14
  for (int u = 0; u < U; ++u)
#pragma GCC unroll 3
    for (int v = 0; v < KV; ++v) _mm512_storeu_ps(out + u * ld + 16 * v, acc[v][u]);
}

using TileFn = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, const float*, int64_t,
                        const float*, float*, int64_t);

// kTiles[S - 1][KV - 1][U - 1], null where U > max_positions(KV).
template <int S, int KV, int... U>
constexpr std::array<TileFn, kMaxPositions> tile_row(std::integer_sequence<int, U...>) {
  return {(U + 1 <= max_positions(KV)
               ? channel_row_tile<KV, std::min(U + 1, max_positions(KV)), S>
               : nullptr)...};
}
template <int S, int... KV>
constexpr std::array<std::array<TileFn, kMaxPositions>, kMaxVectors> tile_table(
    std::integer_sequence<int, KV...>) {
  return {tile_row<S, KV + 1>(std::make_integer_sequence<int, kMaxPositions>{})...};
}
constexpr std::array<std::array<std::array<TileFn, kMaxPositions>, kMaxVectors>, 2> kTiles = {
    tile_table<1>(std::make_integer_sequence<int, kMaxVectors>{}),
    tile_table<2>(std::make_integer_sequence<int, kMaxVectors>{})};

// A group's channel vectors in blocks of at most kMaxVectors, as even as possible (4: 2 + 2).
struct Blocks {
  int64_t vectors, count;
  explicit Blocks(const Conv2dShape& s)
      : vectors(s.group_out() / 16), count(direct_blocks(vectors, kMaxVectors)) {}
  int64_t start(int64_t b) const { return direct_block_start(vectors, count, b); }
};

bool padded(const Conv2dShape& s) { return s.pad_h > 0 || s.pad_w > 0; }

// Floats of w, as transpose_weights_by_tap writes them at the workspace's front.
int64_t weight_floats(const Conv2dShape& s) {
  return s.out_channels * s.group_in() * s.kernel_h * kTaps;
}

// One image's channel group of x with its zero border, when s has padding (else nothing).
int64_t padded_group_floats(const Conv2dShape& s) {
  if (!padded(s)) return 0;
  return (s.group_in() * (s.in_h + 2 * s.pad_h) * (s.in_w + 2 * s.pad_w) + 15) / 16 * 16;
}

int64_t yt_floats(const Conv2dShape& s) { return s.out_h() * s.out_w() * 16 * kMaxVectors; }
int64_t scratch_floats(const Conv2dShape& s) { return padded_group_floats(s) + yt_floats(s); }

// Task t = (image, group, block), block fastest: the block's plane into yt, then into y. With
// padding, the image's group is first copied with its zero border into the thread's scratch,
// unless the thread's previous task had copied it (a thread's tasks are one contiguous range):
// the copy stays in L2 and needs no batch-sized workspace (the whole-batch padded copy this
// replaces was written to memory and read back).
void forward_task(int64_t t, int64_t tasks, const float* x, const float* wt, const float* bias,
                  float* y, const Conv2dShape& s, const Blocks& blocks, ChannelScratch& scratch) {
  const int64_t b = t % blocks.count, group = t / blocks.count % s.groups;
  const int64_t n = t / blocks.count / s.groups;
  const int64_t v0 = blocks.start(b), KV = blocks.start(b + 1) - v0, ld = 16 * KV;
  const int64_t Kg = s.group_out(), k0 = group * Kg + 16 * v0, S = s.stride_h;
  const int64_t OH = s.out_h(), OW = s.out_w(), P = OH * OW;
  const int64_t W = s.in_w + 2 * s.pad_w, HW = (s.in_h + 2 * s.pad_h) * W;
  const int64_t group_floats = s.group_in() * s.in_h * s.in_w;
  const float* xg = x + (n * s.in_channels + group * s.group_in()) * s.in_h * s.in_w;
  // During a group's last block, the next task's group (the planes that follow) into L2.
  const float* next = b + 1 == blocks.count && t + 1 < tasks ? xg + group_floats : nullptr;
  if (padded(s)) {
    if (scratch.image != n || scratch.group != group) {
      pad_planes(xg, s.group_in(), s.in_h, s.in_w, s.pad_h, s.pad_w, scratch.padded);
      scratch.image = n;
      scratch.group = group;
    }
    xg = scratch.padded;
  }
  float* yt = scratch.yt;
  const float* wg = wt + group * Kg * s.group_in() * s.kernel_h * kTaps + 16 * v0;
  const float* bias_k = bias ? bias + k0 : nullptr;
  const int64_t segments = direct_blocks(OW, max_positions(static_cast<int>(KV)));
  for (int64_t oh = 0; oh < OH; ++oh) {
    if (next) prefetch_share_l2(next, group_floats, oh, OH);
    for (int64_t i = 0; i < segments; ++i) {
      const int64_t ow0 = direct_block_start(OW, segments, i);
      const int64_t U = direct_block_start(OW, segments, i + 1) - ow0;
      kTiles[S - 1][KV - 1][U - 1](xg + S * (oh * W + ow0), HW, W, s.group_in(), s.kernel_h, wg,
                                   Kg, bias_k, yt + (oh * OW + ow0) * ld, ld);
    }
  }
  float* yk = y + (n * s.out_channels + k0) * P;
  for (int64_t v = 0; v < KV; ++v) {
    for (int64_t p = 0; p < P; p += 16) {
      transpose16_block(yt + p * ld + 16 * v, ld, std::min<int64_t>(16, P - p), 16,
                        yk + 16 * v * P + p, P);
    }
  }
}

}  // namespace

bool channel_forward_applies(const Conv2dShape& s) { return channel_kernels_take(s); }

int64_t channel_forward_workspace(const Conv2dShape& s) {
  return weight_floats(s) + int64_t(get_num_threads()) * scratch_floats(s);
}

void channel_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                     const Conv2dShape& s, float* workspace) {
  transpose_weights_by_tap(w, s, workspace);
  const float* wt = workspace;
  float* scratch = workspace + weight_floats(s);
  const Blocks blocks(s);
  const int64_t tasks = s.batch * s.groups * blocks.count;
  run_channel_tasks(tasks, scratch, scratch_floats(s), padded_group_floats(s),
                    [&](int64_t t, ChannelScratch& mine) {
                      forward_task(t, tasks, x, wt, bias_or_null, y, s, blocks, mine);
                    });
}

}  // namespace ember::kernels::cpu
