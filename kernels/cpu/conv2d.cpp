#include "kernels/cpu/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Every conv here is im2col + gemm: per image, col [C*R*S, OH*OW] and y_n = W [K, C*R*S] * col.
// Images run in parallel, one col buffer per thread; with fewer images than threads the images
// run one after another and gemm uses the threads instead.

int64_t col_elements(const Conv2dShape& s) {
  return s.in_channels * s.kernel_h * s.kernel_w * s.out_h() * s.out_w();
}

// Threads the image loop uses: 1 means "serial over images, threaded gemm".
int image_threads(const Conv2dShape& s) {
  const int nt = get_num_threads();
  return (nt > 1 && s.batch >= nt && !omp_in_parallel()) ? nt : 1;
}

template <class T>
void im2col(const T* x, T* col, const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  for (int64_t c = 0; c < s.in_channels; ++c) {
    const T* plane = x + c * s.in_h * s.in_w;
    for (int64_t r = 0; r < s.kernel_h; ++r) {
      for (int64_t q = 0; q < s.kernel_w; ++q) {
        T* out = col + ((c * s.kernel_h + r) * s.kernel_w + q) * OH * OW;
        const int64_t dw = q * s.dilation_w - s.pad_w;
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
          const T* row = plane + ih * s.in_w;
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

// dx (one image, zeroed here) += the columns of col scattered back to their input positions.
template <class T>
void col2im(const T* col, T* dx, const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  std::fill(dx, dx + s.in_channels * s.in_h * s.in_w, T(0));
  for (int64_t c = 0; c < s.in_channels; ++c) {
    T* plane = dx + c * s.in_h * s.in_w;
    for (int64_t r = 0; r < s.kernel_h; ++r) {
      for (int64_t q = 0; q < s.kernel_w; ++q) {
        const T* in = col + ((c * s.kernel_h + r) * s.kernel_w + q) * OH * OW;
        const int64_t dw = q * s.dilation_w - s.pad_w;
        int64_t ow_lo = 0, ow_hi = OW;
        while (ow_lo < OW && ow_lo * s.stride_w + dw < 0) ++ow_lo;
        while (ow_hi > ow_lo && (ow_hi - 1) * s.stride_w + dw >= s.in_w) --ow_hi;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * s.stride_h - s.pad_h + r * s.dilation_h;
          if (ih < 0 || ih >= s.in_h) continue;
          T* row = plane + ih * s.in_w;
          const T* i = in + oh * OW;
          for (int64_t ow = ow_lo; ow < ow_hi; ++ow) row[ow * s.stride_w + dw] += i[ow];
        }
      }
    }
  }
}

template <class T>
void forward_image(const T* x, const T* w, const T* bias, T* y, const Conv2dShape& s, T* col) {
  const int64_t K = s.out_channels, CRS = s.in_channels * s.kernel_h * s.kernel_w;
  const int64_t P = s.out_h() * s.out_w();
  im2col(x, col, s);
  gemm<T>(false, false, K, P, CRS, T(1), w, CRS, col, P, T(0), y, P);
  if (bias) {
    for (int64_t k = 0; k < K; ++k) {
      T* row = y + k * P;
      const T b = bias[k];
      for (int64_t p = 0; p < P; ++p) row[p] += b;
    }
  }
}

template <class T>
void backward_input_image(const T* dy, const T* w, T* dx, const Conv2dShape& s, T* col) {
  const int64_t K = s.out_channels, CRS = s.in_channels * s.kernel_h * s.kernel_w;
  const int64_t P = s.out_h() * s.out_w();
  gemm<T>(true, false, CRS, P, K, T(1), w, CRS, dy, P, T(0), col, P);
  col2im(col, dx, s);
}

}  // namespace

int64_t conv2d_forward_workspace(const Conv2dShape& s) {
  return int64_t(get_num_threads()) * col_elements(s);
}

int64_t conv2d_backward_input_workspace(const Conv2dShape& s) {
  return int64_t(get_num_threads()) * col_elements(s);
}

int64_t conv2d_backward_weight_workspace(const Conv2dShape& s) {
  const int64_t dw = s.out_channels * s.in_channels * s.kernel_h * s.kernel_w;
  return int64_t(get_num_threads()) * (col_elements(s) + dw);
}

template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    T* workspace) {
  const int64_t x_image = s.in_channels * s.in_h * s.in_w;
  const int64_t y_image = s.out_channels * s.out_h() * s.out_w();
  const int64_t col = col_elements(s);
  const int threads = image_threads(s);
  if (threads == 1) {
    for (int64_t n = 0; n < s.batch; ++n) {
      forward_image(x + n * x_image, w, bias_or_null, y + n * y_image, s, workspace);
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t n = 0; n < s.batch; ++n) {
    forward_image(x + n * x_image, w, bias_or_null, y + n * y_image, s,
                  workspace + omp_get_thread_num() * col);
  }
}

template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, T* workspace) {
  const int64_t x_image = s.in_channels * s.in_h * s.in_w;
  const int64_t y_image = s.out_channels * s.out_h() * s.out_w();
  const int64_t col = col_elements(s);
  const int threads = image_threads(s);
  if (threads == 1) {
    for (int64_t n = 0; n < s.batch; ++n) {
      backward_input_image(dy + n * y_image, w, dx + n * x_image, s, workspace);
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t n = 0; n < s.batch; ++n) {
    backward_input_image(dy + n * y_image, w, dx + n * x_image, s,
                         workspace + omp_get_thread_num() * col);
  }
}

template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null,
                            const Conv2dShape& s, T* workspace) {
  const int64_t K = s.out_channels, CRS = s.in_channels * s.kernel_h * s.kernel_w;
  const int64_t P = s.out_h() * s.out_w();
  const int64_t x_image = s.in_channels * s.in_h * s.in_w, y_image = K * P;
  const int64_t col = col_elements(s), dw_size = K * CRS;
  const int threads = image_threads(s);
  if (threads == 1) {
    for (int64_t n = 0; n < s.batch; ++n) {
      im2col(x + n * x_image, workspace, s);
      gemm<T>(false, true, K, CRS, P, T(1), dy + n * y_image, P, workspace, P, n == 0 ? T(0) : T(1),
              dw, CRS);
    }
  } else {
    // Thread t sums images [batch * t / threads, batch * (t + 1) / threads) into its partial.
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      T* my_col = workspace + t * (col + dw_size);
      T* my_dw = my_col + col;
      const int64_t n0 = s.batch * t / threads, n1 = s.batch * (t + 1) / threads;
      for (int64_t n = n0; n < n1; ++n) {
        im2col(x + n * x_image, my_col, s);
        gemm<T>(false, true, K, CRS, P, T(1), dy + n * y_image, P, my_col, P,
                n == n0 ? T(0) : T(1), my_dw, CRS);
      }
      if (n1 == n0) std::fill(my_dw, my_dw + dw_size, T(0));
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t i = 0; i < dw_size; ++i) {
        T sum = workspace[col + i];
        for (int u = 1; u < threads; ++u) sum += workspace[u * (col + dw_size) + col + i];
        dw[i] = sum;
      }
    }
  }
  if (dbias_or_null) {
    const int bias_threads = (get_num_threads() > 1 && !omp_in_parallel() && s.batch * y_image > 32768)
                                 ? get_num_threads() : 1;
#pragma omp parallel for num_threads(bias_threads) schedule(static)
    for (int64_t k = 0; k < K; ++k) {
      T total = T(0);
      for (int64_t n = 0; n < s.batch; ++n) {
        const T* row = dy + n * y_image + k * P;
        T sum = T(0);
        for (int64_t p = 0; p < P; ++p) sum += row[p];
        total += sum;
      }
      dbias_or_null[k] = total;
    }
  }
}

#define EMBER_INSTANTIATE_CONV2D(T)                                                              \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, T*);     \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, T*);        \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, T*);
EMBER_INSTANTIATE_CONV2D(float)
EMBER_INSTANTIATE_CONV2D(double)
#undef EMBER_INSTANTIATE_CONV2D

}  // namespace ember::kernels::cpu
