#include "ember/kernels/cpu/conv2d_depthwise.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [depthwise rows]: every pass works a plane at a time (one image, one channel: a few KB,
// in L1), one output row and one tap (r, q) at a time, over the output columns [lo, hi) whose
// input column ow * stride_w + q * dilation_w - pad_w lies inside the row: a branch-free loop
// along the row that the compiler vectorises (contiguous for stride 1). The planes are the
// parallel unit, so the 3x3 MobileNet conv streams x and y once, near the memory bandwidth.

// Taps per kernel row whose column ranges Plane keeps precomputed; wider kernels compute theirs
// per row (two divisions per tap and row were most of the time of a 28-wide MobileNet row).
constexpr int64_t kMaxCachedTaps = 16;

// The plane geometry the row loops need, with every tap's column range precomputed.
struct Plane {
  int64_t H, W, OH, OW, R, S, sh, sw, ph, pw, dh, dw;
  int64_t lo[kMaxCachedTaps], hi[kMaxCachedTaps];
};

// Output columns [lo, hi) whose input column ow * sw + off lies in [0, W) (off = q * dw - pw).
inline void columns_of(const Plane& g, int64_t off, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + g.sw - 1) / g.sw;
  hi = off >= g.W ? 0 : std::min(g.OW, (g.W - 1 - off) / g.sw + 1);
  if (hi < lo) hi = lo;
}

inline void columns(const Plane& g, int64_t q, int64_t& lo, int64_t& hi) {
  if (q < kMaxCachedTaps) {
    lo = g.lo[q];
    hi = g.hi[q];
  } else {
    columns_of(g, q * g.dw - g.pw, lo, hi);
  }
}

Plane plane_of(const Conv2dShape& s) {
  Plane g{s.in_h,     s.in_w,     s.out_h(), s.out_w(), s.kernel_h,   s.kernel_w, s.stride_h,
          s.stride_w, s.pad_h,    s.pad_w,   s.dilation_h, s.dilation_w, {},        {}};
  for (int64_t q = 0; q < std::min(g.S, kMaxCachedTaps); ++q) columns_of(g, q * g.dw - g.pw, g.lo[q], g.hi[q]);
  return g;
}

// One output plane: y = bias + sum over taps of w[r, q] * x shifted.
template <class T>
[[gnu::always_inline]] inline void forward_plane_loop(const T* x, const T* w, T bias, T* y, const Plane& g) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    T* yr = y + oh * g.OW;
#pragma omp simd
    for (int64_t ow = 0; ow < g.OW; ++ow) yr[ow] = bias;
    for (int64_t r = 0; r < g.R; ++r) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      const T* xr = x + ih * g.W;
      for (int64_t q = 0; q < g.S; ++q) {
        const int64_t off = q * g.dw - g.pw;
        int64_t lo, hi;
        columns(g, q, lo, hi);
        const T wv = w[r * g.S + q];
        if (g.sw == 1) {
          const T* xs = xr + off;
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xs[ow];
        } else {
          const int64_t sw = g.sw;
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * sw + off];
        }
      }
    }
  }
}

// Note [the 3x3 path]: the MobileNet conv (3x3, any stride, padding and dilation) first copies
// the input plane into a zero-bordered scratch plane (L1-resident), so that every output reads
// its 9 taps without bounds checks; then each output row is one vector loop over ow with all 9
// taps in its body (9 loads and FMAs and one store per vector of outputs), instead of 9 short
// loops that each load and store the row again. Taps are added in the order (r, q), after bias.
// The rows of x's zero-bordered plane (width W + 2 * pw) that a 3x3 kernel reads.
template <class T>
[[gnu::always_inline]] inline void pad_plane3x3(const T* x, const Plane& g, T* padded) {
  const int64_t PW = g.W + 2 * g.pw, rows = (g.OH - 1) * g.sh + 2 * g.dh + 1;  // rows <= H + 2 * ph
  for (int64_t pr = 0; pr < rows; ++pr) {
    T* dst = padded + pr * PW;
    const int64_t ih = pr - g.ph;
    if (ih < 0 || ih >= g.H) {
      std::fill(dst, dst + PW, T(0));
      continue;
    }
    std::fill(dst, dst + g.pw, T(0));
    std::copy(x + ih * g.W, x + (ih + 1) * g.W, dst + g.pw);
    std::fill(dst + g.pw + g.W, dst + PW, T(0));
  }
}

template <class T>
[[gnu::always_inline]] inline void forward_plane3x3_loop(const T* x, const T* w, T bias, T* y, const Plane& g,
                                                          T* padded) {
  pad_plane3x3(x, g, padded);
  const int64_t PW = g.W + 2 * g.pw;
  const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  const int64_t sw = g.sw, d = g.dw;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const T* r0 = padded + oh * g.sh * PW;
    const T* r1 = r0 + g.dh * PW;
    const T* r2 = r1 + g.dh * PW;
    T* yr = y + oh * g.OW;
    if (sw == 1 && d == 1) {
#pragma omp simd
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        yr[ow] = bias + w0 * r0[ow] + w1 * r0[ow + 1] + w2 * r0[ow + 2] + w3 * r1[ow] + w4 * r1[ow + 1] +
                 w5 * r1[ow + 2] + w6 * r2[ow] + w7 * r2[ow + 1] + w8 * r2[ow + 2];
      }
    } else {
#pragma omp simd
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t i = ow * sw;
        yr[ow] = bias + w0 * r0[i] + w1 * r0[i + d] + w2 * r0[i + 2 * d] + w3 * r1[i] + w4 * r1[i + d] +
                 w5 * r1[i + 2 * d] + w6 * r2[i] + w7 * r2[i + d] + w8 * r2[i + 2 * d];
      }
    }
  }
}

// The 3x3 weight gradient of one image's plane, on the padded plane as the forward: acc[t * OW + ow]
// (t = r * 3 + q) += dy[oh][ow] * x_padded[oh * sh + r * dh][ow * sw + q * dw] over the rows, one
// vector loop per row for all 9 taps; the caller sums acc once per channel (no horizontal sum
// per row and tap, which dominated the row-by-row dots).
template <class T>
[[gnu::always_inline]] inline void weight_plane3x3_loop(const T* dy, const T* x, T* acc, const Plane& g,
                                                         T* padded) {
  pad_plane3x3(x, g, padded);
  const int64_t PW = g.W + 2 * g.pw, OW = g.OW, sw = g.sw, d = g.dw;
  T* a0 = acc;
  T* a1 = a0 + OW;
  T* a2 = a1 + OW;
  T* a3 = a2 + OW;
  T* a4 = a3 + OW;
  T* a5 = a4 + OW;
  T* a6 = a5 + OW;
  T* a7 = a6 + OW;
  T* a8 = a7 + OW;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const T* r0 = padded + oh * g.sh * PW;
    const T* r1 = r0 + g.dh * PW;
    const T* r2 = r1 + g.dh * PW;
    const T* dyr = dy + oh * OW;
#pragma omp simd
    for (int64_t ow = 0; ow < OW; ++ow) {
      const T v = dyr[ow];
      const int64_t i = ow * sw;
      a0[ow] += v * r0[i];
      a1[ow] += v * r0[i + d];
      a2[ow] += v * r0[i + 2 * d];
      a3[ow] += v * r1[i];
      a4[ow] += v * r1[i + d];
      a5[ow] += v * r1[i + 2 * d];
      a6[ow] += v * r2[i];
      a7[ow] += v * r2[i + d];
      a8[ow] += v * r2[i + 2 * d];
    }
  }
}

// The 3x3 input gradient at stride 1, in the gather form on a zero-bordered copy of dy (borders of
// 2 * dilation above and left, so every tap reads without bounds checks):
// dx[ih][iw] += sum over (r, q) of w[r][q] * dy[ih + ph - r * dh][iw + pw - q * dw], one vector
// loop per dx row for all 9 taps, instead of the scatter form's 9 short loops per dy row.
// Requires stride 1 (other strides keep the scatter form).
int64_t input_padded_rows(const Plane& g) { return g.H + g.ph + 2 * g.dh; }
int64_t input_padded_width(const Plane& g) { return g.W + g.pw + 2 * g.dw; }

template <class T>
[[gnu::always_inline]] inline void input_plane3x3_loop(const T* dy, const T* w, T* dx, const Plane& g,
                                                        T* padded) {
  const int64_t PW = input_padded_width(g), rows = input_padded_rows(g), top = 2 * g.dh, left = 2 * g.dw;
  for (int64_t pr = 0; pr < rows; ++pr) {
    T* dst = padded + pr * PW;
    const int64_t oh = pr - top;
    if (oh < 0 || oh >= g.OH) {
      std::fill(dst, dst + PW, T(0));
      continue;
    }
    const int64_t copied = std::min(g.OW, PW - left);  // dy columns any tap reads
    std::fill(dst, dst + left, T(0));
    std::copy(dy + oh * g.OW, dy + oh * g.OW + copied, dst + left);
    std::fill(dst + left + copied, dst + PW, T(0));
  }
  const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  const int64_t d = g.dw, col0 = g.pw + left;
  for (int64_t ih = 0; ih < g.H; ++ih) {
    const T* r0 = padded + (ih + g.ph + top) * PW + col0;  // tap row r reads padded row ih + ph + top - r * dh
    const T* r1 = r0 - g.dh * PW;
    const T* r2 = r1 - g.dh * PW;
    T* dxr = dx + ih * g.W;
#pragma omp simd
    for (int64_t iw = 0; iw < g.W; ++iw) {
      dxr[iw] += w0 * r0[iw] + w1 * r0[iw - d] + w2 * r0[iw - 2 * d] + w3 * r1[iw] + w4 * r1[iw - d] +
                 w5 * r1[iw - 2 * d] + w6 * r2[iw] + w7 * r2[iw - d] + w8 * r2[iw - 2 * d];
    }
  }
}

// Scratch elements forward_plane needs for the 3x3 path (0 for other kernels).
int64_t padded_elements(const Plane& g) {
  return g.R == 3 && g.S == 3 ? (g.H + 2 * g.ph) * (g.W + 2 * g.pw) : 0;
}

// One dx plane's share from one output channel: dx += the transposed conv of dy with w (scatter
// form: each dy row adds into the dx rows its taps read; within a row the targets are distinct).
template <class T>
[[gnu::always_inline]] inline void input_plane_loop(const T* dy, const T* w, T* dx, const Plane& g) {
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const T* dyr = dy + oh * g.OW;
    for (int64_t r = 0; r < g.R; ++r) {
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      T* dxr = dx + ih * g.W;
      for (int64_t q = 0; q < g.S; ++q) {
        const int64_t off = q * g.dw - g.pw;
        int64_t lo, hi;
        columns(g, q, lo, hi);
        const T wv = w[r * g.S + q];
        if (g.sw == 1) {
          T* ds = dxr + off;
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) ds[ow] += wv * dyr[ow];
        } else {
          // Strided targets, distinct within the row: no vector dependence, but scattered stores.
          const int64_t sw = g.sw;
          for (int64_t ow = lo; ow < hi; ++ow) dxr[ow * sw + off] += wv * dyr[ow];
        }
      }
    }
  }
}

// dw[r, q] += sum over the plane of dy * x shifted by tap (r, q).
template <class T>
[[gnu::always_inline]] inline void weight_plane_loop(const T* dy, const T* x, T* dw, const Plane& g) {
  for (int64_t r = 0; r < g.R; ++r) {
    for (int64_t q = 0; q < g.S; ++q) {
      const int64_t off = q * g.dw - g.pw;
      int64_t lo, hi;
      columns(g, q, lo, hi);
      T sum = T(0);
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        const int64_t ih = oh * g.sh - g.ph + r * g.dh;
        if (ih < 0 || ih >= g.H) continue;
        const T* dyr = dy + oh * g.OW;
        const T* xr = x + ih * g.W;
        T row = T(0);
        if (g.sw == 1) {  // contiguous: no gathers
          const T* xs = xr + off;
#pragma omp simd reduction(+ : row)
          for (int64_t ow = lo; ow < hi; ++ow) row += dyr[ow] * xs[ow];
        } else {
          const int64_t sw = g.sw;
#pragma omp simd reduction(+ : row)
          for (int64_t ow = lo; ow < hi; ++ow) row += dyr[ow] * xr[ow * sw + off];
        }
        sum += row;
      }
      dw[r * g.S + q] += sum;
    }
  }
}

// The plane loops compiled for AVX-512, AVX2 and the baseline (threading.h). The clone is picked
// once per process, so a result is the same from run to run on one machine.
EMBER_VECTOR_CLONES void forward_plane(const float* x, const float* w, float b, float* y, const Plane& g,
                                       float* padded) {
  if (g.R == 3 && g.S == 3) {
    forward_plane3x3_loop(x, w, b, y, g, padded);
  } else {
    forward_plane_loop(x, w, b, y, g);
  }
}
EMBER_VECTOR_CLONES void forward_plane(const double* x, const double* w, double b, double* y, const Plane& g,
                                       double* padded) {
  if (g.R == 3 && g.S == 3) {
    forward_plane3x3_loop(x, w, b, y, g, padded);
  } else {
    forward_plane_loop(x, w, b, y, g);
  }
}
EMBER_VECTOR_CLONES void input_plane3x3(const float* dy, const float* w, float* dx, const Plane& g, float* padded) {
  input_plane3x3_loop(dy, w, dx, g, padded);
}
EMBER_VECTOR_CLONES void input_plane3x3(const double* dy, const double* w, double* dx, const Plane& g,
                                        double* padded) {
  input_plane3x3_loop(dy, w, dx, g, padded);
}
EMBER_VECTOR_CLONES void input_plane(const float* dy, const float* w, float* dx, const Plane& g) {
  input_plane_loop(dy, w, dx, g);
}
EMBER_VECTOR_CLONES void input_plane(const double* dy, const double* w, double* dx, const Plane& g) {
  input_plane_loop(dy, w, dx, g);
}
EMBER_VECTOR_CLONES void weight_plane3x3(const float* dy, const float* x, float* acc, const Plane& g,
                                         float* padded) {
  weight_plane3x3_loop(dy, x, acc, g, padded);
}
EMBER_VECTOR_CLONES void weight_plane3x3(const double* dy, const double* x, double* acc, const Plane& g,
                                         double* padded) {
  weight_plane3x3_loop(dy, x, acc, g, padded);
}
EMBER_VECTOR_CLONES void weight_plane(const float* dy, const float* x, float* dw, const Plane& g) {
  weight_plane_loop(dy, x, dw, g);
}
EMBER_VECTOR_CLONES void weight_plane(const double* dy, const double* x, double* dw, const Plane& g) {
  weight_plane_loop(dy, x, dw, g);
}

// Threads for `units` independent planes of `work` multiply-adds each: one below ~64 K in all.
int threads_for(int64_t units, int64_t work) {
  if (omp_in_parallel() || units * work < (int64_t{1} << 16)) return 1;
  return static_cast<int>(std::min<int64_t>(get_num_threads(), units));
}

}  // namespace

template <class T>
void depthwise_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s) {
  const Plane g = plane_of(s);
  const int64_t K = s.out_channels, M = K / s.in_channels, RS = g.R * g.S;
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW, planes = s.batch * K;
  parallel_ranges(planes, threads_for(planes, out_plane * RS), [&](int64_t begin, int64_t end) {
    std::vector<T> padded(static_cast<size_t>(padded_elements(g)));  // this thread's scratch plane
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / K, k = i % K;
      forward_plane(x + (n * s.in_channels + k / M) * in_plane, w + k * RS,
                    bias_or_null ? bias_or_null[k] : T(0), y + i * out_plane, g, padded.data());
    }
  });
}

template <class T>
void depthwise_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s) {
  const Plane g = plane_of(s);
  const int64_t C = s.in_channels, M = s.out_channels / C, RS = g.R * g.S;
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW, planes = s.batch * C;
  const bool three = g.R == 3 && g.S == 3 && g.sh == 1 && g.sw == 1;
  parallel_ranges(planes, threads_for(planes, M * out_plane * RS), [&](int64_t begin, int64_t end) {
    std::vector<T> padded(three ? static_cast<size_t>(input_padded_rows(g) * input_padded_width(g)) : 0);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / C, c = i % C;
      T* dxp = dx + i * in_plane;
      std::fill(dxp, dxp + in_plane, T(0));
      for (int64_t m = 0; m < M; ++m) {
        const int64_t k = c * M + m;
        if (three) {
          input_plane3x3(dy + (n * s.out_channels + k) * out_plane, w + k * RS, dxp, g, padded.data());
        } else {
          input_plane(dy + (n * s.out_channels + k) * out_plane, w + k * RS, dxp, g);
        }
      }
    }
  });
}

template <class T>
void depthwise_backward_weight(const T* dy, const T* x, T* dw, const Conv2dShape& s) {
  const Plane g = plane_of(s);
  const int64_t K = s.out_channels, M = K / s.in_channels, RS = g.R * g.S;
  const int64_t in_plane = g.H * g.W, out_plane = g.OH * g.OW;
  // Threaded over output channels: each dw[k] belongs to one thread, summed over images in order.
  const bool three = g.R == 3 && g.S == 3;
  parallel_ranges(K, threads_for(K, s.batch * out_plane * RS), [&](int64_t begin, int64_t end) {
    // The 3x3 path's scratch: the padded plane and the 9 per-column accumulators.
    std::vector<T> padded(static_cast<size_t>(padded_elements(g))), acc(three ? static_cast<size_t>(9 * g.OW) : 0);
    for (int64_t k = begin; k < end; ++k) {
      T* dwk = dw + k * RS;
      std::fill(dwk, dwk + RS, T(0));
      if (three) std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t n = 0; n < s.batch; ++n) {
        const T* dyp = dy + (n * K + k) * out_plane;
        const T* xp = x + (n * s.in_channels + k / M) * in_plane;
        if (three) {
          weight_plane3x3(dyp, xp, acc.data(), g, padded.data());
        } else {
          weight_plane(dyp, xp, dwk, g);
        }
      }
      if (three) {
        for (int64_t t = 0; t < 9; ++t) {
          T sum = T(0);
          for (int64_t ow = 0; ow < g.OW; ++ow) sum += acc[static_cast<size_t>(t * g.OW + ow)];
          dwk[t] = sum;
        }
      }
    }
  });
}

#define EMBER_INSTANTIATE_DEPTHWISE(T)                                                             \
  template void depthwise_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&);        \
  template void depthwise_backward_input<T>(const T*, const T*, T*, const Conv2dShape&);           \
  template void depthwise_backward_weight<T>(const T*, const T*, T*, const Conv2dShape&);
EMBER_INSTANTIATE_DEPTHWISE(float)
EMBER_INSTANTIATE_DEPTHWISE(double)
#undef EMBER_INSTANTIATE_DEPTHWISE

}  // namespace ember::kernels::cpu
