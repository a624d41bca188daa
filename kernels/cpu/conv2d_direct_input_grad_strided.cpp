// The input gradient of a 3x3 stride-2 convolution, vectorised over input channels (Note [the
// strided input gradient by input channels]).
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [the strided input gradient by input channels]. dx[c, ih, iw] = sum over k, r, q of
// w[k, c, r, q] * dy[k, oh, ow] where ih = 2 * oh - pad_h + r and iw = 2 * ow - pad_w + q: each dx
// element takes only the taps whose parity matches its own. Run as a stride-1 conv of dy (the
// route of the stride-1 input gradient) it would first spread dy with zeros and do 4x the work;
// im2col + gemm + col2im (the route this replaces) ran at 0.64x libtorch on ResNet-8's shapes.
//
// Here a vector holds 16 input channels, as the forward by output channels holds 16 output
// channels, and a register tile is one vector x U <= 14 consecutive columns of one dx row, the
// row's segment starting at an even column iw0 = 2 * j0. For dx row ih the kernel rows r with
// ih + pad_h - r even read dy row oh = (ih + pad_h - r) / 2: one or two of the three. Within a
// row, dy column j0 - 1 + t feeds column u = 2 * t + q - pad_w - 2 of the segment through tap q,
// so one broadcast of dy serves up to 3 products: 3 weight loads and 8 broadcasts for 21 FMAs.
// Every product is one of the conv's own taps, no zero-weight filler: the FMAs are exactly the
// forward's. One vector a tile: tiles of 2 vectors x up to 10 columns (12
// loads for 24 FMAs) took 1.1x the time on ResNet-8's 32 -> 64, whose 14-wide dx rows they cut
// into segments of 6 and 8.
//
// dy's channel group of each image is copied with a zero border of 1 into a per-thread scratch
// (it stays in L2), so rows and columns -1 and OH / OW read zeros. Each output is summed by one
// task in the order k, r, q: the same bits for every thread count. The sums go position-major to
// the thread's yt[p, 16] and are transposed into dx 16 x 16 at a time.

constexpr int kTaps = 3;  // kernel_h and kernel_w
constexpr int kMaxColumns = 14;  // 14 accumulators, 3 weights and a broadcast in zmm registers

// out[16 * u + l] = the sums of dx column iw0 + u, channel l of the vector, over the `rows`
// kernel rows row_tap[i] reading dy at row_offset[i]. dy points at the padded group's channel 0,
// column j0 - 1 (padded column j0); wt at the vector's first channel of (k 0, r 0, q 0), laid
// out wt[((k * 3 + r) * 3 + q) * Cg + c].
template <int U, int PW>
__attribute__((target("avx512f"))) void strided_dx_row_tile(const float* dy, int64_t HW,
                                                            int64_t K, int rows,
                                                            const int64_t* row_offset,
                                                            const int* row_tap, const float* wt,
                                                            int64_t Cg, float* out) {
  __m512 acc[U];
#pragma GCC unroll 14
  for (int u = 0; u < U; ++u) acc[u] = _mm512_setzero_ps();
  constexpr int kReads = (U + 1 + PW) / 2 + 1;  // dy columns the segment reads
  for (int64_t k = 0; k < K; ++k) {
    for (int i = 0; i < rows; ++i) {
      const float* dr = dy + k * HW + row_offset[i];
      const float* wr = wt + (k * kTaps + row_tap[i]) * kTaps * Cg;
      __m512 w[kTaps];
#pragma GCC unroll 3
      for (int q = 0; q < kTaps; ++q) w[q] = _mm512_loadu_ps(wr + q * Cg);
#pragma GCC unroll 16
      for (int t = 0; t < kReads; ++t) {
        const __m512 b = _mm512_set1_ps(dr[t]);
#pragma GCC unroll 3
        for (int q = 0; q < kTaps; ++q) {
          const int u = 2 * t + q - PW - 2;
          if (u >= 0 && u < U) acc[u] = _mm512_fmadd_ps(w[q], b, acc[u]);
        }
      }
    }
  }
#pragma GCC unroll 14
  for (int u = 0; u < U; ++u) _mm512_storeu_ps(out + 16 * u, acc[u]);
}

using TileFn = void (*)(const float*, int64_t, int64_t, int, const int64_t*, const int*,
                        const float*, int64_t, float*);

// kTiles[pad_w][U - 1].
template <int PW, int... U>
constexpr std::array<TileFn, kMaxColumns> tile_row(std::integer_sequence<int, U...>) {
  return {strided_dx_row_tile<U + 1, PW>...};
}
constexpr std::array<std::array<TileFn, kMaxColumns>, 2> kTiles = {
    tile_row<0>(std::make_integer_sequence<int, kMaxColumns>{}),
    tile_row<1>(std::make_integer_sequence<int, kMaxColumns>{})};

int64_t weight_floats(const Conv2dShape& s) { return s.out_channels * s.group_in() * kTaps * kTaps; }

// One image's channel group of dy with a zero border of 1.
int64_t padded_group_floats(const Conv2dShape& s) {
  return (s.group_out() * (s.out_h() + 2) * (s.out_w() + 2) + 15) / 16 * 16;
}
int64_t yt_floats(const Conv2dShape& s) { return s.in_h * s.in_w * 16; }
int64_t scratch_floats(const Conv2dShape& s) { return padded_group_floats(s) + yt_floats(s); }

// wt[g][((k * 3 + r) * 3 + q) * Cg + c] = w[g * Kg + k, c, r, q]: each (k, tap) of a group one
// contiguous run of its Cg input channels.
void transpose_weights_by_input(const float* w, const Conv2dShape& s, float* wt) {
  const int64_t Kg = s.group_out(), Cg = s.group_in(), T = kTaps * kTaps;
  for (int64_t g = 0; g < s.groups; ++g) {
    const float* wg = w + g * Kg * Cg * T;
    float* tg = wt + g * Kg * Cg * T;
    for (int64_t k = 0; k < Kg; ++k)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t tap = 0; tap < T; ++tap) tg[(k * T + tap) * Cg + c] = wg[(k * Cg + c) * T + tap];
  }
}

// Task t = (image, group, vector of 16 input channels), vector fastest: the vector's dx plane
// into yt, then into dx.
void input_grad_task(int64_t t, const float* dy, const float* wt, float* dx, const Conv2dShape& s,
                     ChannelScratch& scratch) {
  const int64_t vectors = s.group_in() / 16, v = t % vectors, group = t / vectors % s.groups;
  const int64_t n = t / vectors / s.groups;
  const int64_t Kg = s.group_out(), Cg = s.group_in(), c0 = group * Cg + 16 * v;
  const int64_t OH = s.out_h(), OW = s.out_w(), H = s.in_h, W = s.in_w, P = H * W;
  const int64_t PWd = OW + 2, PHW = (OH + 2) * PWd;
  if (scratch.image != n || scratch.group != group) {
    pad_planes(dy + (n * s.out_channels + group * Kg) * OH * OW, Kg, OH, OW, 1, 1, scratch.padded);
    scratch.image = n;
    scratch.group = group;
  }
  float* yt = scratch.yt;
  const float* wv = wt + group * Kg * Cg * kTaps * kTaps + 16 * v;
  const int64_t pairs = (W + 1) / 2, segments = direct_blocks(pairs, kMaxColumns / 2);
  const auto& tiles = kTiles[s.pad_w];
  for (int64_t ih = 0; ih < H; ++ih) {
    int64_t row_offset[2];
    int row_tap[2], rows = 0;
    for (int r = 0; r < kTaps; ++r) {
      if ((ih + s.pad_h - r) % 2 != 0) continue;
      row_offset[rows] = ((ih + s.pad_h - r) / 2 + 1) * PWd;  // padded row oh + 1
      row_tap[rows++] = r;
    }
    for (int64_t i = 0; i < segments; ++i) {
      const int64_t p0 = direct_block_start(pairs, segments, i);
      const int64_t iw0 = 2 * p0, U = std::min(2 * direct_block_start(pairs, segments, i + 1), W) - iw0;
      tiles[U - 1](scratch.padded + p0, PHW, Kg, rows, row_offset, row_tap, wv, Cg,
                   yt + (ih * W + iw0) * 16);
    }
  }
  float* dxc = dx + (n * s.in_channels + c0) * P;
  for (int64_t p = 0; p < P; p += 16) {
    transpose16_block(yt + p * 16, 16, std::min<int64_t>(16, P - p), 16, dxc + p, P);
  }
}

}  // namespace

bool strided_input_grad_applies(const Conv2dShape& s) {
  return direct_isa() == DirectIsa::avx512 && s.kernel_h == kTaps && s.kernel_w == kTaps &&
         s.stride_h == 2 && s.stride_w == 2 && s.dilation_h == 1 && s.dilation_w == 1 &&
         (s.pad_h == 0 || s.pad_h == 1) && (s.pad_w == 0 || s.pad_w == 1) &&
         s.group_in() % 16 == 0 && s.in_h >= kTaps - 2 * s.pad_h && s.in_w >= kTaps - 2 * s.pad_w;
}

int64_t strided_input_grad_workspace(const Conv2dShape& s) {
  return weight_floats(s) + int64_t(get_num_threads()) * scratch_floats(s);
}

void strided_input_grad(const float* dy, const float* w, float* dx, const Conv2dShape& s,
                        float* workspace) {
  transpose_weights_by_input(w, s, workspace);
  const float* wt = workspace;
  float* scratch = workspace + weight_floats(s);
  const int64_t tasks = s.batch * s.groups * (s.group_in() / 16);
  run_channel_tasks(tasks, scratch, scratch_floats(s), padded_group_floats(s),
                    [&](int64_t t, ChannelScratch& mine) {
                      input_grad_task(t, dy, wt, dx, s, mine);
                    });
}

}  // namespace ember::kernels::cpu
