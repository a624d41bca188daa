#include "kernels/cpu/pool.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

int plane_threads(const Pool2dShape& s) {
  const int64_t work = s.batch * s.channels * s.in_h * s.in_w;
  return (work > 32768 && !omp_in_parallel()) ? get_num_threads() : 1;
}

template <class T, bool kRelu>
void pool_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  const int64_t in_plane = s.in_h * s.in_w, out_plane = OH * OW;
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* in = x + pl * in_plane;
    T* out = y + pl * out_plane;
    int64_t* arg = argmax + pl * out_plane;
    if (s.kernel_h == 2 && s.kernel_w == 2 && s.stride_h == 2 && s.stride_w == 2 && s.pad_h == 0 &&
        s.pad_w == 0) {
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
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = oh * s.stride_h - s.pad_h;
      const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + s.kernel_h, s.in_h);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = ow * s.stride_w - s.pad_w;
        const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + s.kernel_w, s.in_w);
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_index = h_lo * s.in_w + w_lo;
        for (int64_t ih = h_lo; ih < h_hi; ++ih) {
          for (int64_t iw = w_lo; iw < w_hi; ++iw) {
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
#pragma omp parallel for num_threads(plane_threads(s)) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    T* d = dx + pl * in_plane;
    std::fill(d, d + in_plane, T(0));
    const T* g = dy + pl * out_plane;
    const int64_t* arg = argmax + pl * out_plane;
    for (int64_t o = 0; o < out_plane; ++o) d[arg[o]] += g[o];
  }
}

#define EMBER_INSTANTIATE_POOL(T)                                                                \
  template void max_pool2d_forward<T>(const T*, T*, int64_t*, const Pool2dShape&);               \
  template void max_pool2d_relu_forward<T>(const T*, T*, int64_t*, const Pool2dShape&);          \
  template void max_pool2d_backward<T>(const T*, const int64_t*, T*, const Pool2dShape&);
EMBER_INSTANTIATE_POOL(float)
EMBER_INSTANTIATE_POOL(double)
#undef EMBER_INSTANTIATE_POOL

}  // namespace ember::kernels::cpu
