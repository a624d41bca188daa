#include "ember/kernels/cpu/pool.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/kernels/cpu/threading.h"

#include <immintrin.h>

namespace ember::kernels::cpu {
namespace {

// Whether the 2 x 2 / stride 2 float paths may use AVX-512 on this CPU (checked once).
bool has_avx512() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return yes;
}

// The tutorial's pool: 2 x 2 windows, stride 2, no padding (windows tile the input).
// (Undilated, and every window whole: ceil mode may add a partial last row or column.)
bool is_2x2_stride2(const Pool2dShape& s) {
  return s.kernel_h == 2 && s.kernel_w == 2 && s.stride_h == 2 && s.stride_w == 2 && s.pad_h == 0 &&
         s.pad_w == 0 && s.dilation_h == 1 && s.dilation_w == 1 && 2 * s.out_h() <= s.in_h &&
         2 * s.out_w() <= s.in_w;
}

int threads_for(int64_t work) { return (work > 32768 && !omp_in_parallel()) ? get_num_threads() : 1; }

int plane_threads(const Pool2dShape& s) { return threads_for(s.batch * s.channels * s.in_h * s.in_w); }

// One plane of the tutorial's pool (2 x 2, stride 2, no padding) for float, 16 outputs at a time:
// two rows of 32 inputs are loaded (masked on the tail, so nothing past the row is touched),
// split into even and odd columns, and the window's four candidates are compared in row-major
// order with the scalar path's rule (take v when v > best or v is NaN), so values and argmax
// indices are identical to it. Indices are built in int32 (the caller checks the plane fits)
// and widened to int64 on the store.
template <bool kRelu>
__attribute__((target("avx512f"))) void pool2x2_plane_avx512(const float* in, float* out,
                                                               int64_t* arg, int64_t W,
                                                               int64_t OH, int64_t OW) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i lane2 = even;  // 2 * lane: the window's first column relative to 2 * ow
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r0 = in + 2 * oh * W;
    const float* r1 = r0 + W;
    for (int64_t ow = 0; ow < OW; ow += 16) {
      const int64_t n = std::min<int64_t>(16, OW - ow);  // outputs in this block
      const int64_t m = 2 * n;                             // inputs per row
      const __mmask16 ma = m >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << m) - 1);
      const __mmask16 mb = m >= 32 ? __mmask16(0xFFFF) : m <= 16 ? __mmask16(0) : __mmask16((1u << (m - 16)) - 1);
      const __mmask16 mo = n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
      const __m512 a0 = _mm512_maskz_loadu_ps(ma, r0 + 2 * ow), b0 = _mm512_maskz_loadu_ps(mb, r0 + 2 * ow + 16);
      const __m512 a1 = _mm512_maskz_loadu_ps(ma, r1 + 2 * ow), b1 = _mm512_maskz_loadu_ps(mb, r1 + 2 * ow + 16);
      const __m512 v[4] = {_mm512_permutex2var_ps(a0, even, b0), _mm512_permutex2var_ps(a0, odd, b0),
                           _mm512_permutex2var_ps(a1, even, b1), _mm512_permutex2var_ps(a1, odd, b1)};
      const __m512i i0 = _mm512_add_epi32(_mm512_set1_epi32(int32_t(2 * oh * W + 2 * ow)), lane2);
      const __m512i idx[4] = {i0, _mm512_add_epi32(i0, _mm512_set1_epi32(1)),
                              _mm512_add_epi32(i0, _mm512_set1_epi32(int32_t(W))),
                              _mm512_add_epi32(i0, _mm512_set1_epi32(int32_t(W + 1)))};
      __m512 best = v[0];
      __m512i best_index = idx[0];
      for (int u = 1; u < 4; ++u) {
        const __mmask16 take = _mm512_cmp_ps_mask(v[u], best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v[u], v[u], _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v[u]);
        best_index = _mm512_mask_mov_epi32(best_index, take, idx[u]);
      }
      if constexpr (kRelu) best = _mm512_mask_mov_ps(best, _mm512_cmp_ps_mask(best, zero, _CMP_LT_OQ), zero);
      _mm512_mask_storeu_ps(out + oh * OW + ow, mo, best);
      const __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(best_index));
      const __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(best_index, 1));
      _mm512_mask_storeu_epi64(arg + oh * OW + ow, __mmask8(mo & 0xFF), lo);
      _mm512_mask_storeu_epi64(arg + oh * OW + ow + 8, __mmask8(mo >> 8), hi);
    }
  }
}

// The backward of one plane of that pool in gather form, 8 windows (16 input columns) at a
// time: the windows do not overlap, so dx[ih, iw] = dy of its window where the window's argmax
// is (ih, iw), else 0. Each window's dy and argmax are duplicated to its two columns and compared
// with the lane's index; dx is written once, without the zero fill and scattered adds of the
// general path. Inputs outside every window (the last row or column when H or W is odd) get 0.
__attribute__((target("avx512f"))) void pool2x2_backward_plane_avx512(const float* dy,
                                                                        const int64_t* arg,
                                                                        float* dx, int64_t H,
                                                                        int64_t W, int64_t OH,
                                                                        int64_t OW) {
  const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t oh = 0; oh < OH; ++oh) {
    for (int64_t ow = 0; ow < OW; ow += 8) {
      const int64_t n = std::min<int64_t>(8, OW - ow);  // windows in this block
      const __mmask8 mw = __mmask8((1u << n) - 1);
      const __mmask16 mi = __mmask16((1u << (2 * n)) - 1);  // their input columns
      const __m512 g = _mm512_maskz_loadu_ps(__mmask16(mw), dy + oh * OW + ow);
      const __m256i a = _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64(mw, arg + oh * OW + ow));
      const __m512 g2 = _mm512_permutexvar_ps(pairs, g);
      const __m512i a2 = _mm512_permutexvar_epi32(pairs, _mm512_castsi256_si512(a));
      for (int64_t ih = 2 * oh; ih < 2 * oh + 2; ++ih) {
        const __m512i index = _mm512_add_epi32(_mm512_set1_epi32(int32_t(ih * W + 2 * ow)), lane);
        const __mmask16 hit = _mm512_cmpeq_epi32_mask(a2, index);
        _mm512_mask_storeu_ps(dx + ih * W + 2 * ow, mi, _mm512_maskz_mov_ps(hit, g2));
      }
    }
    if (W > 2 * OW) {
      dx[2 * oh * W + W - 1] = 0.0f;
      dx[(2 * oh + 1) * W + W - 1] = 0.0f;
    }
  }
  std::fill(dx + 2 * OH * W, dx + H * W, 0.0f);
}

template <class T, bool kRelu>
void pool_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  const int64_t in_plane = s.in_h * s.in_w, out_plane = OH * OW;
  const bool tutorial_pool = is_2x2_stride2(s);
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* in = x + pl * in_plane;
    T* out = y + pl * out_plane;
    int64_t* arg = argmax + pl * out_plane;
    if constexpr (std::is_same_v<T, float>) {
      if (tutorial_pool && has_avx512() && in_plane < (int64_t(1) << 31)) {
        pool2x2_plane_avx512<kRelu>(in, out, arg, s.in_w, OH, OW);
        continue;
      }
    }
    if (tutorial_pool) {
      // The tutorial's pool: every window is whole, four loads in row-major window order.
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t i0 = 2 * oh * s.in_w + 2 * ow;
          const int64_t idx[4] = {i0, i0 + 1, i0 + s.in_w, i0 + s.in_w + 1};
          T best = in[i0];
          int64_t best_index = i0;
          for (int u = 1; u < 4; ++u) {
            // Selects, not branches: on real data the comparison is unpredictable.
            const T v = in[idx[u]];
            const bool take = (v > best) | (v != v);
            best = take ? v : best;
            best_index = take ? idx[u] : best_index;
          }
          if constexpr (kRelu) best = best < T(0) ? T(0) : best;
          out[oh * OW + ow] = best;
          arg[oh * OW + ow] = best_index;
        }
      }
      continue;
    }
    // General path: window taps h0 + j * dilation_h (PyTorch's loop), padding skipped.
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      const int64_t h_lo = first_tap(h0, s.dilation_h);
      const int64_t h_hi = std::min(h0 + (s.kernel_h - 1) * s.dilation_h + 1, s.in_h);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        const int64_t w_lo = first_tap(w0, s.dilation_w);
        const int64_t w_hi = std::min(w0 + (s.kernel_w - 1) * s.dilation_w + 1, s.in_w);
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_index = h_lo * s.in_w + w_lo;
        for (int64_t ih = h_lo; ih < h_hi; ih += s.dilation_h) {
          for (int64_t iw = w_lo; iw < w_hi; iw += s.dilation_w) {
            const int64_t index = ih * s.in_w + iw;
            const T v = in[index];
            if (v > best || std::isnan(v)) {
              best = v;
              best_index = index;
            }
          }
        }
        if constexpr (kRelu) best = best < T(0) ? T(0) : best;
        out[oh * OW + ow] = best;
        arg[oh * OW + ow] = best_index;
      }
    }
  }
}

}  // namespace

template <class T>
void max_pool2d_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s) {
  pool_forward<T, false>(x, y, argmax, s);
}

template <class T>
void max_pool2d_relu_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s) {
  pool_forward<T, true>(x, y, argmax, s);
}

template <class T>
void max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const Pool2dShape& s) {
  const int64_t planes = s.batch * s.channels, in_plane = s.in_h * s.in_w;
  const int64_t out_plane = s.out_h() * s.out_w();
  const bool tutorial_pool = is_2x2_stride2(s);
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* d = dx + pl * in_plane;
    if constexpr (std::is_same_v<T, float>) {
      if (tutorial_pool && has_avx512() && in_plane < (int64_t(1) << 31)) {
        pool2x2_backward_plane_avx512(dy + pl * out_plane, argmax + pl * out_plane, d, s.in_h,
                                      s.in_w, s.out_h(), s.out_w());
        continue;
      }
    }
    std::fill(d, d + in_plane, T(0));
    const T* g = dy + pl * out_plane;
    const int64_t* arg = argmax + pl * out_plane;
    for (int64_t o = 0; o < out_plane; ++o) d[arg[o]] += g[o];
  }
}

template <class T>
void avg_pool2d_forward(const T* x, T* y, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override) {
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  const int64_t in_plane = s.in_h * s.in_w, out_plane = OH * OW;
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* in = x + pl * in_plane;
    T* out = y + pl * out_plane;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const PoolSpan h = avg_pool_span(oh, s.stride_h, s.pad_h, s.kernel_h, s.in_h);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const PoolSpan w = avg_pool_span(ow, s.stride_w, s.pad_w, s.kernel_w, s.in_w);
        T sum = T(0);
        for (int64_t ih = h.lo; ih < h.hi; ++ih) {
          const T* row = in + ih * s.in_w;
          for (int64_t iw = w.lo; iw < w.hi; ++iw) sum += row[iw];
        }
        const int64_t divisor = avg_pool_divisor(h, w, count_include_pad, divisor_override);
        out[oh * OW + ow] = divisor != 0 ? sum / T(divisor) : T(0);
      }
    }
  }
}

template <class T>
void avg_pool2d_backward(const T* dy, T* dx, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override) {
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  const int64_t in_plane = s.in_h * s.in_w, out_plane = OH * OW;
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* d = dx + pl * in_plane;
    const T* g = dy + pl * out_plane;
    std::fill(d, d + in_plane, T(0));
    for (int64_t oh = 0; oh < OH; ++oh) {
      const PoolSpan h = avg_pool_span(oh, s.stride_h, s.pad_h, s.kernel_h, s.in_h);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const PoolSpan w = avg_pool_span(ow, s.stride_w, s.pad_w, s.kernel_w, s.in_w);
        const int64_t divisor = avg_pool_divisor(h, w, count_include_pad, divisor_override);
        if (divisor == 0) continue;
        const T share = g[oh * OW + ow] / T(divisor);
        for (int64_t ih = h.lo; ih < h.hi; ++ih) {
          T* row = d + ih * s.in_w;
#pragma omp simd
          for (int64_t iw = w.lo; iw < w.hi; ++iw) row[iw] += share;
        }
      }
    }
  }
}

template <class T>
void adaptive_avg_pool2d_forward(const T* x, T* y, const AdaptivePool2dShape& s) {
  const int64_t planes = s.batch * s.channels, in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
  const int threads = threads_for(planes * in_plane);
  if (out_plane == 1) {
    // Global average pooling: one contiguous sum per plane.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* in = x + pl * in_plane;
      T sum = T(0);
#pragma omp simd reduction(+ : sum)
      for (int64_t i = 0; i < in_plane; ++i) sum += in[i];
      y[pl] = sum / T(in_plane);
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* in = x + pl * in_plane;
    T* out = y + pl * out_plane;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
        T sum = T(0);
        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
          for (int64_t iw = w_lo; iw < w_hi; ++iw) sum += in[ih * s.in_w + iw];
        }
        out[oh * s.out_w + ow] = sum / T((h_hi - h_lo) * (w_hi - w_lo));
      }
    }
  }
}

template <class T>
void adaptive_avg_pool2d_backward(const T* dy, T* dx, const AdaptivePool2dShape& s) {
  const int64_t planes = s.batch * s.channels, in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
  const int threads = threads_for(planes * in_plane);
  if (out_plane == 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T share = dy[pl] / T(in_plane);
      T* d = dx + pl * in_plane;
#pragma omp simd
      for (int64_t i = 0; i < in_plane; ++i) d[i] = share;
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* d = dx + pl * in_plane;
    const T* g = dy + pl * out_plane;
    std::fill(d, d + in_plane, T(0));
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
        const T share = g[oh * s.out_w + ow] / T((h_hi - h_lo) * (w_hi - w_lo));
        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
          for (int64_t iw = w_lo; iw < w_hi; ++iw) d[ih * s.in_w + iw] += share;
        }
      }
    }
  }
}

template <class T>
void adaptive_max_pool2d_forward(const T* x, T* y, int64_t* argmax, const AdaptivePool2dShape& s) {
  const int64_t planes = s.batch * s.channels, in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for num_threads(threads_for(planes * in_plane)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* in = x + pl * in_plane;
    for (int64_t oh = 0; oh < s.out_h; ++oh) {
      const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_index = h_lo * s.in_w + w_lo;
        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
          for (int64_t iw = w_lo; iw < w_hi; ++iw) {
            const T v = in[ih * s.in_w + iw];
            if (v > best || std::isnan(v)) {
              best = v;
              best_index = ih * s.in_w + iw;
            }
          }
        }
        y[pl * out_plane + oh * s.out_w + ow] = best;
        argmax[pl * out_plane + oh * s.out_w + ow] = best_index;
      }
    }
  }
}

template <class T>
void adaptive_max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const AdaptivePool2dShape& s) {
  const int64_t planes = s.batch * s.channels, in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
#pragma omp parallel for num_threads(threads_for(planes * in_plane)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* d = dx + pl * in_plane;
    std::fill(d, d + in_plane, T(0));
    for (int64_t o = 0; o < out_plane; ++o) d[argmax[pl * out_plane + o]] += dy[pl * out_plane + o];
  }
}

#define EMBER_INSTANTIATE_POOL(T)                                                                \
  template void max_pool2d_forward<T>(const T*, T*, int64_t*, const Pool2dShape&);               \
  template void max_pool2d_relu_forward<T>(const T*, T*, int64_t*, const Pool2dShape&);          \
  template void max_pool2d_backward<T>(const T*, const int64_t*, T*, const Pool2dShape&);        \
  template void avg_pool2d_forward<T>(const T*, T*, const Pool2dShape&, bool, int64_t);          \
  template void avg_pool2d_backward<T>(const T*, T*, const Pool2dShape&, bool, int64_t);         \
  template void adaptive_avg_pool2d_forward<T>(const T*, T*, const AdaptivePool2dShape&);        \
  template void adaptive_avg_pool2d_backward<T>(const T*, T*, const AdaptivePool2dShape&);       \
  template void adaptive_max_pool2d_forward<T>(const T*, T*, int64_t*, const AdaptivePool2dShape&); \
  template void adaptive_max_pool2d_backward<T>(const T*, const int64_t*, T*, const AdaptivePool2dShape&);
EMBER_INSTANTIATE_POOL(float)
EMBER_INSTANTIATE_POOL(double)
#undef EMBER_INSTANTIATE_POOL

}  // namespace ember::kernels::cpu
