#include "ember/kernels/cpu/conv2d.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/kernels/cpu/conv2d_depthwise.h"
#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Every conv here is im2col + gemm over a *group* of images at once: col [C*R*S, nb*OH*OW] holds
// the im2col of nb images side by side (image i in columns [i*P, (i+1)*P)), so the tutorial's
// thin products (conv1: K = 10 rows, 25 deep, 576 columns per image) become one gemm of about
// kGroupColumns columns instead of nb small calls, each of which paid packing and call overhead.
// y / dy of a group are gathered to (or scattered from) [K, nb*P] beside it.
// Groups run in parallel, one workspace slice per thread (a fixed range of images per thread);
// with fewer images than threads the groups run one after another and gemm uses the threads.
// (Image groups are unrelated to the convolution's channel groups, s.groups: with s.groups > 1
// each image group runs one im2col + gemm per channel group, on that group's channel slices of x,
// w and y, with the per-group shape group_slice(s) (conv2d_direct.h). groups == 1 is exactly the
// ungrouped code.)

constexpr int64_t kGroupColumns = 512;

int64_t plane(const Conv2dShape& s) { return s.out_h() * s.out_w(); }
// Reduction depth of one channel group's gemm (the weight's row length).
int64_t crs(const Conv2dShape& s) { return s.group_in() * s.kernel_h * s.kernel_w; }

// Images per group: enough to reach kGroupColumns columns, at least 1, at most the batch.
int64_t group_images(const Conv2dShape& s) {
  const int64_t P = plane(s);
  return std::max<int64_t>(1, std::min<int64_t>(s.batch, (kGroupColumns + P - 1) / P));
}

// Elements of one thread's slice for forward and backward_input: col + gathered y / dy.
int64_t group_elements(const Conv2dShape& s) {
  return group_images(s) * plane(s) * (crs(s) + s.group_out());
}

// Threads the group loop uses: 1 means "serial over groups, threaded gemm".
int image_threads(const Conv2dShape& s) {
  const int nt = get_num_threads();
  return (nt > 1 && s.batch >= nt && !omp_in_parallel()) ? nt : 1;
}

// Stride-2 rows (ResNet's downsampling convs) on AVX-512: the scalar loops below were half of
// those convs' forward and input gradient. Both move the same values as the scalar loops, in the
// same order: the results are bit-for-bit the same.

// One tap (c, r, q) of the stride-2 im2col: out[oh * OW + ow] = plane[ih * W + 2 * ow + dw] with
// ih = oh * stride_h + ih0, zero where the input index falls outside the image. Whole rows of
// OW at a time, two masked loads, one permute and one store per 16 outputs; the lane masks
// depend on the tap alone and are computed once. Masked-off lanes are not read.
__attribute__((target("avx512f"))) void im2col_tap_stride2_avx512(const float* plane, float* out,
                                                                   int64_t ih0, int64_t dw,
                                                                   const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w(), H = s.in_h, W = s.in_w;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  constexpr int64_t kMaxVectors = 8;  // rows of up to 128 outputs take this path
  // Per vector of outputs: the lanes inside the image, and the lanes of the two source vectors
  // they come from.
  __mmask16 keep[kMaxVectors], first[kMaxVectors], second[kMaxVectors];
  const int64_t vectors = (OW + 15) / 16;
  for (int64_t v = 0; v < vectors; ++v) {
    unsigned k = 0, a = 0, b = 0;
    for (int64_t l = 0; l < 16 && 16 * v + l < OW; ++l) {
      const int64_t iw = 2 * (16 * v + l) + dw;
      if (iw < 0 || iw >= W) continue;
      k |= 1u << l;
      if (l < 8) a |= 1u << (2 * l); else b |= 1u << (2 * l - 16);
    }
    keep[v] = __mmask16(k), first[v] = __mmask16(a), second[v] = __mmask16(b);
  }
  for (int64_t oh = 0; oh < OH; ++oh) {
    float* o = out + oh * OW;
    const int64_t ih = oh * s.stride_h + ih0;
    const bool inside = ih >= 0 && ih < H;
    for (int64_t v = 0; v < vectors; ++v) {
      __m512 x = _mm512_setzero_ps();
      if (inside) {
        const float* src = plane + ih * W + dw + 32 * v;
        x = _mm512_maskz_permutex2var_ps(keep[v], _mm512_maskz_loadu_ps(first[v], src), even,
                                         _mm512_maskz_loadu_ps(second[v], src + 16));
      }
      _mm512_mask_storeu_ps(o + 16 * v, direct_lanes16(OW - 16 * v), x);
    }
  }
}

// dst[2 * i] += src[i] for i < n; the odd elements between are neither read nor written.
__attribute__((target("avx512f"))) void add_every_second_avx512(const float* src, float* dst,
                                                                 int64_t n) {
  const __m512i low = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i high = _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
  // The even lanes of the first `values` pairs of a 16-float window.
  const auto even_lanes = [](int64_t values) {
    return __mmask16(0x5555 & direct_lanes16(2 * std::min<int64_t>(values, 8) - 1));
  };
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __m512 v = _mm512_maskz_loadu_ps(direct_lanes16(left), src + i);
    const __mmask16 m0 = even_lanes(left);
    float* d0 = dst + 2 * i;
    _mm512_mask_storeu_ps(d0, m0,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(m0, d0), _mm512_permutexvar_ps(low, v)));
    if (left > 8) {
      const __mmask16 m1 = even_lanes(left - 8);
      float* d1 = d0 + 16;
      _mm512_mask_storeu_ps(d1, m1,
                            _mm512_add_ps(_mm512_maskz_loadu_ps(m1, d1), _mm512_permutexvar_ps(high, v)));
    }
  }
}

// col[row * ld + p], p in [0, OH*OW): the im2col of one image, rows (c, r, q) in that order.
template <class T>
void im2col(const T* x, T* col, int64_t ld, const Conv2dShape& s) {
  [[maybe_unused]] const bool stride2_avx512 = std::is_same_v<T, float> && s.stride_w == 2 &&
                                               s.out_w() <= 128 && direct_isa() == DirectIsa::avx512;
  const int64_t OH = s.out_h(), OW = s.out_w();
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const T* plane_x = x + c * s.in_h * s.in_w;
    for (int64_t r = 0; r < s.kernel_h; ++r) {
      for (int64_t q = 0; q < s.kernel_w; ++q) {
        T* out = col + ((c * s.kernel_h + r) * s.kernel_w + q) * ld;
        const int64_t dw = q * s.dilation_w - s.pad_w;
        if constexpr (std::is_same_v<T, float>) {
          if (stride2_avx512) {
            im2col_tap_stride2_avx512(plane_x, out, r * s.dilation_h - s.pad_h, dw, s);
            continue;
          }
        }
        // Output columns whose input column lies inside the image: [ow_lo, ow_hi).
        int64_t ow_lo = 0, ow_hi = OW;
        while (ow_lo < OW && ow_lo * s.stride_w + dw < 0) ++ow_lo;
        while (ow_hi > ow_lo && (ow_hi - 1) * s.stride_w + dw >= s.in_w) --ow_hi;
        for (int64_t oh = 0; oh < OH; ++oh) {
          T* o = out + oh * OW;
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dilation_h;
          if (ih < 0 || ih >= s.in_h) {
            std::fill(o, o + OW, T(0));
            continue;
          }
          const T* row = plane_x + ih * s.in_w;
          std::fill(o, o + ow_lo, T(0));
          if (s.stride_w == 1) {
            std::memcpy(o + ow_lo, row + ow_lo + dw, static_cast<size_t>(ow_hi - ow_lo) * sizeof(T));
          } else {
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) o[ow] = row[ow * s.stride_w + dw];
          }
          std::fill(o + ow_hi, o + OW, T(0));
        }
      }
    }
  }
}

// dx (one image, zeroed here) = the columns col[row * ld + p] scattered back to their inputs.
template <class T>
void col2im(const T* col, int64_t ld, T* dx, const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  [[maybe_unused]] const bool every_second = std::is_same_v<T, float> && s.stride_w == 2 &&
                                             direct_isa() == DirectIsa::avx512;
  std::fill(dx, dx + s.in_channels * s.in_h * s.in_w, T(0));
  for (int64_t c = 0; c < s.in_channels; ++c) {
    T* plane_dx = dx + c * s.in_h * s.in_w;
    for (int64_t r = 0; r < s.kernel_h; ++r) {
      for (int64_t q = 0; q < s.kernel_w; ++q) {
        const T* in = col + ((c * s.kernel_h + r) * s.kernel_w + q) * ld;
        const int64_t dw = q * s.dilation_w - s.pad_w;
        int64_t ow_lo = 0, ow_hi = OW;
        while (ow_lo < OW && ow_lo * s.stride_w + dw < 0) ++ow_lo;
        while (ow_hi > ow_lo && (ow_hi - 1) * s.stride_w + dw >= s.in_w) --ow_hi;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dilation_h;
          if (ih < 0 || ih >= s.in_h) continue;
          T* row = plane_dx + ih * s.in_w;
          const T* i = in + oh * OW;
          if (s.stride_w == 1) {
            T* dst = row + dw;
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) dst[ow] += i[ow];
          } else if constexpr (std::is_same_v<T, float>) {
            if (every_second && ow_hi > ow_lo) {
              add_every_second_avx512(i + ow_lo, row + 2 * ow_lo + dw, ow_hi - ow_lo);
            } else {
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) row[ow * s.stride_w + dw] += i[ow];
            }
          } else {
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) row[ow * s.stride_w + dw] += i[ow];
          }
        }
      }
    }
  }
}

constexpr int64_t kMaxTapsWide = 64;

// col2im for float with stride 1 (any padding and dilation) on AVX-512, in the gather form: each
// vector of 16 columns of a dx row sums its (r, q) terms straight from col, dx[c, ih, iw] = sum
// over r, q of col[(c, r, q), ih + pad_h - r * dil_h, iw + pad_w - q * dil_w], the columns outside
// [0, OW) masked off. It writes dx once (no zero fill, no read-modify-write); the scatter form
// above adds rows of OW floats one loop at a time, which was most of conv2's input gradient
// (250 x 8 loops of 8 floats per image). Terms are added in a fixed order: deterministic.
__attribute__((target("avx512f"))) void col2im_stride1_avx512(const float* col, int64_t ld,
                                                               float* dx, const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w(), H = s.in_h, W = s.in_w;
  const int64_t R = s.kernel_h, Q = s.kernel_w;
  const auto lanes = [](int64_t lo, int64_t hi) {  // lanes [lo, hi) of 16
    return hi <= lo ? __mmask16(0) : __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
  };
  // Per vector of columns, tap q's lanes and the output column its lane 0 reads: the same for
  // every channel and row, so computed once per vector (col2im_any keeps Q <= kMaxTapsWide).
  __mmask16 mask[kMaxTapsWide];
  int64_t first[kMaxTapsWide];
  for (int64_t j0 = 0; j0 < W; j0 += 16) {
    const int64_t width = std::min<int64_t>(16, W - j0);
    for (int64_t q = 0; q < Q; ++q) {
      first[q] = j0 + s.pad_w - q * s.dilation_w;  // lane l reads output column first + l
      mask[q] = lanes(std::max<int64_t>(0, -first[q]), std::min(width, OW - first[q]));
    }
    for (int64_t c = 0; c < s.in_channels; ++c) {
      for (int64_t ih = 0; ih < H; ++ih) {
        // Two sums (even and odd q) halve the chain of dependent adds.
        __m512 even = _mm512_setzero_ps(), odd = even;
        for (int64_t r = 0; r < R; ++r) {
          const int64_t oh = ih + s.pad_h - r * s.dilation_h;
          if (oh < 0 || oh >= OH) continue;
          const float* rows = col + (c * R + r) * Q * ld + oh * OW;
          // Masked lanes are not read, so a row's start may lie before the first lane read.
          int64_t q = 0;
          for (; q + 1 < Q; q += 2) {
            even = _mm512_add_ps(even, _mm512_maskz_loadu_ps(mask[q], rows + q * ld + first[q]));
            odd = _mm512_add_ps(odd, _mm512_maskz_loadu_ps(mask[q + 1], rows + (q + 1) * ld + first[q + 1]));
          }
          if (q < Q) even = _mm512_add_ps(even, _mm512_maskz_loadu_ps(mask[q], rows + q * ld + first[q]));
        }
        _mm512_mask_storeu_ps(dx + (c * H + ih) * W + j0, lanes(0, width), _mm512_add_ps(even, odd));
      }
    }
  }
}

template <class T>
void col2im_any(const T* col, int64_t ld, T* dx, const Conv2dShape& s) {
  if constexpr (std::is_same_v<T, float>) {
    if (s.stride_h == 1 && s.stride_w == 1 && s.kernel_w <= kMaxTapsWide &&
        direct_isa() == DirectIsa::avx512) {
      col2im_stride1_avx512(col, ld, dx, s);
      return;
    }
  }
  col2im(col, ld, dx, s);
}

// Images [n0, n1) of the forward, in groups; ws holds group_elements(s).
template <class T>
void forward_images(const T* x, const T* w, const T* bias, T* y, const Conv2dShape& s, int64_t n0,
                    int64_t n1, T* ws) {
  const int64_t K = s.group_out(), CRS = crs(s), P = plane(s), G = group_images(s);
  const int64_t x_image = s.in_channels * s.in_h * s.in_w, y_image = s.out_channels * P;
  const int64_t x_group = s.group_in() * s.in_h * s.in_w;
  const Conv2dShape one = group_slice(s);
  T* col = ws;
  T* yg = ws + G * P * CRS;
  for (int64_t g0 = n0; g0 < n1; g0 += G) {
    const int64_t nb = std::min(G, n1 - g0), L = nb * P;
    for (int64_t cg = 0; cg < s.groups; ++cg) {
      for (int64_t i = 0; i < nb; ++i) im2col(x + (g0 + i) * x_image + cg * x_group, col + i * P, L, one);
      gemm<T>(false, false, K, L, CRS, T(1), w + cg * K * CRS, CRS, col, L, T(0), yg, L);
      // Scatter [K, nb*P] to nb images of [K, P], adding the bias on the way.
      for (int64_t i = 0; i < nb; ++i) {
        T* yi = y + (g0 + i) * y_image + cg * K * P;
        for (int64_t k = 0; k < K; ++k) {
          const T* src = yg + k * L + i * P;
          T* dst = yi + k * P;
          const T b = bias ? bias[cg * K + k] : T(0);
          for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + b;
        }
      }
    }
  }
}

// dy of images [g0, g0 + nb), channel group cg, gathered into [K / groups, nb*P].
template <class T>
void gather_dy(const T* dy, T* dyg, int64_t g0, int64_t nb, int64_t cg, const Conv2dShape& s) {
  const int64_t K = s.group_out(), P = plane(s), L = nb * P;
  for (int64_t i = 0; i < nb; ++i) {
    const T* src = dy + (g0 + i) * s.out_channels * P + cg * K * P;
    for (int64_t k = 0; k < K; ++k) {
      std::memcpy(dyg + k * L + i * P, src + k * P, static_cast<size_t>(P) * sizeof(T));
    }
  }
}

template <class T>
void backward_input_images(const T* dy, const T* w, T* dx, const Conv2dShape& s, int64_t n0,
                           int64_t n1, T* ws) {
  const int64_t K = s.group_out(), CRS = crs(s), P = plane(s), G = group_images(s);
  const int64_t x_image = s.in_channels * s.in_h * s.in_w, x_group = s.group_in() * s.in_h * s.in_w;
  const Conv2dShape one = group_slice(s);
  T* col = ws;
  T* dyg = ws + G * P * CRS;
  for (int64_t g0 = n0; g0 < n1; g0 += G) {
    const int64_t nb = std::min(G, n1 - g0), L = nb * P;
    for (int64_t cg = 0; cg < s.groups; ++cg) {
      gather_dy(dy, dyg, g0, nb, cg, s);
      gemm<T>(true, false, CRS, L, K, T(1), w + cg * K * CRS, CRS, dyg, L, T(0), col, L);
      for (int64_t i = 0; i < nb; ++i) col2im_any(col + i * P, L, dx + (g0 + i) * x_image + cg * x_group, one);
    }
  }
}

// dw (overwritten) = the sum over images [n0, n1) of dy_n * col_n^T, group by group in order.
template <class T>
void backward_weight_images(const T* dy, const T* x, T* dw, const Conv2dShape& s, int64_t n0,
                            int64_t n1, T* ws) {
  const int64_t K = s.group_out(), CRS = crs(s), P = plane(s), G = group_images(s);
  const int64_t x_image = s.in_channels * s.in_h * s.in_w, x_group = s.group_in() * s.in_h * s.in_w;
  const Conv2dShape one = group_slice(s);
  T* col = ws;
  T* dyg = ws + G * P * CRS;
  if (n1 <= n0) {
    std::fill(dw, dw + s.out_channels * CRS, T(0));
    return;
  }
  for (int64_t g0 = n0; g0 < n1; g0 += G) {
    const int64_t nb = std::min(G, n1 - g0), L = nb * P;
    for (int64_t cg = 0; cg < s.groups; ++cg) {
      for (int64_t i = 0; i < nb; ++i) im2col(x + (g0 + i) * x_image + cg * x_group, col + i * P, L, one);
      gather_dy(dy, dyg, g0, nb, cg, s);
      gemm<T>(false, true, K, CRS, L, T(1), dyg, L, col, L, g0 == n0 ? T(0) : T(1), dw + cg * K * CRS, CRS);
    }
  }
}

// dw by im2col + gemm: thread t sums images [batch * t / threads, batch * (t + 1) / threads)
// into its partial (the last dw_size elements of its workspace slice); partials are added in
// thread order.
template <class T>
void weight_grad_gemm_path(const T* dy, const T* x, T* dw, const Conv2dShape& s, T* workspace) {
  const int64_t dw_size = s.out_channels * crs(s), slice = group_elements(s) + dw_size;
  const int threads = image_threads(s);
  if (threads == 1) {
    backward_weight_images(dy, x, dw, s, 0, s.batch, workspace);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    T* mine = workspace + t * slice;
    backward_weight_images(dy, x, mine + group_elements(s), s, s.batch * t / threads,
                           s.batch * (t + 1) / threads, mine);
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t i = 0; i < dw_size; ++i) {
      T sum = workspace[group_elements(s) + i];
      for (int u = 1; u < threads; ++u) sum += workspace[u * slice + group_elements(s) + i];
      dw[i] = sum;
    }
  }
}

// The sum of dy[n, k] over positions and images [n0, n1), 8 partial sums a row in a fixed order:
// a single chain of dependent adds was 0.7 ms of conv1's weight gradient (368 K additions at 4
// cycles each).
template <class T>
T channel_sum(const T* dy, int64_t k, int64_t n0, int64_t n1, const Conv2dShape& s) {
  const int64_t K = s.out_channels, P = plane(s);
  T total = T(0);
  for (int64_t n = n0; n < n1; ++n) {
    const T* row = dy + (n * K + k) * P;
    T part[8] = {};
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
      for (int u = 0; u < 8; ++u) part[u] += row[p + u];
    }
    T sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; p < P; ++p) sum += row[p];
    total += sum;
  }
  return total;
}

// dbias[k] = the sum of dy[:, k] over images and positions: each image shard of the batch
// (image_shard_begin, conv2d_direct.h) summed apart, on its own thread where there are enough, and
// the shards added in order at the end, so the bits do not depend on the thread count and no
// thread reads the images another core wrote (Note [image shards] in conv2d_direct_weight.cpp).
template <class T>
void bias_grad(const T* dy, T* dbias, const Conv2dShape& s) {
  const int64_t K = s.out_channels, shards = image_shard_count(s);
  std::vector<T> later_shards(static_cast<size_t>((shards - 1) * K));  // shard 0 sums into dbias
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(std::min<int64_t>(get_num_threads(), shards));
  parallel_ranges(shards, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T* sums = i == 0 ? dbias : later_shards.data() + (i - 1) * K;
      const int64_t n0 = image_shard_begin(s, i), n1 = image_shard_begin(s, i + 1);
      for (int64_t k = 0; k < K; ++k) sums[k] = channel_sum(dy, k, n0, n1, s);
    }
  });
  for (int64_t i = 1; i < shards; ++i) {
    for (int64_t k = 0; k < K; ++k) dbias[k] += later_shards[static_cast<size_t>((i - 1) * K + k)];
  }
}

}  // namespace

int64_t conv2d_forward_workspace(const Conv2dShape& s) {
  if (s.depthwise()) return 0;
  // The size is the same for float and double: double never takes the direct path, and the
  // larger of the two sizes serves both.
  const int64_t gemm_path = int64_t(get_num_threads()) * group_elements(s);
  if (direct_forward_applies(s)) return std::max(gemm_path, direct_forward_workspace(s));
  if (direct_padded_applies(s)) return std::max(gemm_path, direct_padded_forward_workspace(s));
  return gemm_path;
}

int64_t conv2d_backward_input_workspace(const Conv2dShape& s) {
  if (s.depthwise()) return 0;
  const int64_t gemm_path = int64_t(get_num_threads()) * group_elements(s);
  if (direct_input_grad_applies(s)) return std::max(gemm_path, direct_input_grad_workspace(s));
  if (strided_input_grad_applies(s)) return std::max(gemm_path, strided_input_grad_workspace(s));
  return gemm_path;
}

int64_t conv2d_backward_weight_workspace(const Conv2dShape& s) {
  if (s.depthwise()) return 0;
  const int64_t gemm_path = int64_t(get_num_threads()) * (group_elements(s) + s.out_channels * crs(s));
  if (direct_weight_grad_applies(s)) return std::max(gemm_path, direct_weight_grad_workspace(s));
  if (direct_padded_weight_grad_applies(s)) {
    return std::max(gemm_path, direct_padded_weight_grad_workspace(s));
  }
  return gemm_path;
}

template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    T* workspace) {
  if (s.depthwise()) {
    depthwise_forward(x, w, bias_or_null, y, s);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (direct_forward_applies(s)) {
      direct_forward(x, w, bias_or_null, y, s, workspace);
      return;
    }
    if (direct_padded_applies(s)) {
      direct_padded_forward(x, w, bias_or_null, y, s, workspace);
      return;
    }
  }
  const int threads = image_threads(s);
  if (threads == 1) {
    forward_images(x, w, bias_or_null, y, s, 0, s.batch, workspace);
    return;
  }
  const int64_t slice = group_elements(s);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    forward_images(x, w, bias_or_null, y, s, s.batch * t / threads, s.batch * (t + 1) / threads,
                   workspace + t * slice);
  }
}

template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, T* workspace) {
  if (s.depthwise()) {
    depthwise_backward_input(dy, w, dx, s);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (direct_input_grad_applies(s)) {
      direct_input_grad(dy, w, dx, s, workspace);
      return;
    }
    if (strided_input_grad_applies(s)) {
      strided_input_grad(dy, w, dx, s, workspace);
      return;
    }
  }
  const int threads = image_threads(s);
  if (threads == 1) {
    backward_input_images(dy, w, dx, s, 0, s.batch, workspace);
    return;
  }
  const int64_t slice = group_elements(s);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    backward_input_images(dy, w, dx, s, s.batch * t / threads, s.batch * (t + 1) / threads,
                          workspace + t * slice);
  }
}

template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null,
                            const Conv2dShape& s, T* workspace) {
  if (s.depthwise()) {
    depthwise_backward_weight(dy, x, dw, s);
  } else if constexpr (std::is_same_v<T, float>) {
    if (direct_weight_grad_applies(s)) {
      direct_weight_grad(dy, x, dw, s, workspace);
    } else if (direct_padded_weight_grad_applies(s)) {
      direct_padded_weight_grad(dy, x, dw, s, workspace);
    } else {
      weight_grad_gemm_path(dy, x, dw, s, workspace);
    }
  } else {
    weight_grad_gemm_path(dy, x, dw, s, workspace);
  }
  if (dbias_or_null) bias_grad(dy, dbias_or_null, s);
}

#define EMBER_INSTANTIATE_CONV2D(T)                                                              \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, T*);     \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, T*);        \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, T*);
EMBER_INSTANTIATE_CONV2D(float)
EMBER_INSTANTIATE_CONV2D(double)
#undef EMBER_INSTANTIATE_CONV2D

}  // namespace ember::kernels::cpu
