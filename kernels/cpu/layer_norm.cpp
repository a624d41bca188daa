#include "ember/kernels/cpu/layer_norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/kernels/cpu/moments.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Below this many elements a call stays on the calling thread (the fork costs more).
constexpr int64_t kParallelElements = 1 << 15;
// The backward's unit of work: a block of rows, whose parameter-gradient terms it sums.
constexpr int64_t kRowsPerBlock = 64;
// The final sum of the blocks' partials gives each thread at least this many columns.
constexpr int64_t kMinColumnsPerThread = 64;

int threads_for(int64_t elements, int64_t units) {
  if (elements < kParallelElements || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<int64_t>(units, 1, get_num_threads()));
}

// The loops over one row (or one row's column range), one function per element type so that
// EMBER_VECTOR_CLONES compiles each for AVX-512, AVX2 and the baseline (see threading.h);
// always_inline puts the loop into every clone. Sums are in double (see the header); the
// statistics' two passes are kernels/cpu/moments.h's.

// y = (x - mean) * invstd, then * weight + bias when affine. Not x * invstd - mean * invstd: when
// |mean| is large against the spread, that difference of two large products cancels away the
// result's digits (a row of one element, x == mean, would not come out 0).
template <class T>
[[gnu::always_inline]] inline void normalize_loop(const T* x, T* y, int64_t n, T mean, T invstd) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * invstd;
}

template <class T>
[[gnu::always_inline]] inline void normalize_affine_loop(const T* x, T* y, int64_t n, T mean, T invstd, const T* w,
                                                         const T* b) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * invstd * w[i] + b[i];
}

// sum g and sum g * xhat over a row, g = dy * w (w null: g = dy), in double.
template <class T>
[[gnu::always_inline]] inline void row_sums_loop(const T* dy, const T* x, const T* w, int64_t n, double mean,
                                                 double invstd, double& sum_g, double& sum_g_xhat) {
  double a = 0, b = 0;
  if (w != nullptr) {
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(dy[i]) * static_cast<double>(w[i]);
      a += g;
      b += g * ((static_cast<double>(x[i]) - mean) * invstd);
    }
  } else {
#pragma omp simd reduction(+ : a, b)
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(dy[i]);
      a += g;
      b += g * ((static_cast<double>(x[i]) - mean) * invstd);
    }
  }
  sum_g = a;
  sum_g_xhat = b;
}

// dx = (g - mean_g - (x - mean) * proj) * invstd, proj = invstd * mean_j(g * xhat).
template <class T>
[[gnu::always_inline]] inline void dx_loop(const T* dy, const T* x, const T* w, T* dx, int64_t n, T mean, T mean_g,
                                           T proj, T invstd) {
  if (w != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = (dy[i] * w[i] - mean_g - (x[i] - mean) * proj) * invstd;
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = (dy[i] - mean_g - (x[i] - mean) * proj) * invstd;
  }
}

// dweight += dy * xhat and dbias += dy over one row, into a block's partial sums (in T: a block
// holds kRowsPerBlock terms; the blocks are then summed in double).
template <class T>
[[gnu::always_inline]] inline void parameter_sums_loop(const T* dy, const T* x, int64_t n, T mean, T invstd,
                                                       T* dweight, T* dbias) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    dweight[i] += dy[i] * ((x[i] - mean) * invstd);
    dbias[i] += dy[i];
  }
}

#define EMBER_LAYER_NORM_LOOPS(T)                                                                               \
  EMBER_VECTOR_CLONES void normalize_range(const T* x, T* y, int64_t n, T mean, T invstd) {                    \
    normalize_loop(x, y, n, mean, invstd);                                                                      \
  }                                                                                                             \
  EMBER_VECTOR_CLONES void normalize_affine_range(const T* x, T* y, int64_t n, T mean, T invstd, const T* w,   \
                                                  const T* b) {                                                 \
    normalize_affine_loop(x, y, n, mean, invstd, w, b);                                                         \
  }                                                                                                             \
  EMBER_VECTOR_CLONES void row_sums_range(const T* dy, const T* x, const T* w, int64_t n, double mean,         \
                                          double invstd, double& a, double& b) {                               \
    row_sums_loop(dy, x, w, n, mean, invstd, a, b);                                                             \
  }                                                                                                             \
  EMBER_VECTOR_CLONES void dx_range(const T* dy, const T* x, const T* w, T* dx, int64_t n, T mean, T mean_g,   \
                                    T proj, T invstd) {                                                         \
    dx_loop(dy, x, w, dx, n, mean, mean_g, proj, invstd);                                                       \
  }                                                                                                             \
  EMBER_VECTOR_CLONES void parameter_sums_range(const T* dy, const T* x, int64_t n, T mean, T invstd, T* dweight, \
                                                T* dbias) {                                                     \
    parameter_sums_loop(dy, x, n, mean, invstd, dweight, dbias);                                                \
  }
EMBER_LAYER_NORM_LOOPS(float)
EMBER_LAYER_NORM_LOOPS(double)
#undef EMBER_LAYER_NORM_LOOPS

}  // namespace

template <class T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd, double eps,
                        const LayerNormShape& s) {
  const int64_t n = s.cols;
  parallel_ranges(s.rows, threads_for(s.numel(), s.rows), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      const double mean = detail::sum_in_double(xr, n) / static_cast<double>(n);
      const double var = detail::squared_deviation_sum(xr, n, mean) / static_cast<double>(n);
      const double invstd = 1.0 / std::sqrt(var + eps);
      save_mean[r] = static_cast<T>(mean);
      save_invstd[r] = static_cast<T>(invstd);
      const T m = static_cast<T>(mean), istd = static_cast<T>(invstd);
      if (weight != nullptr) normalize_affine_range(xr, y + r * n, n, m, istd, weight, bias);
      else normalize_range(xr, y + r * n, n, m, istd);
    }
  });
}

template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx, T* dweight,
                         T* dbias, const LayerNormShape& s) {
  const int64_t n = s.cols;
  const bool want_parameters = dweight != nullptr || dbias != nullptr;
  // One pass over dy and x: each row's dx, and its terms of dweight and dbias added to the
  // partial sums of its block of rows (the row is still in cache). The blocks are fixed by the
  // shape alone and their partials summed in block order, so the result does not depend on the
  // thread count.
  const int64_t blocks = (s.rows + kRowsPerBlock - 1) / kRowsPerBlock;
  std::vector<T> partials(want_parameters ? static_cast<size_t>(2 * blocks * n) : 0);
  parallel_ranges(blocks, threads_for(s.numel(), blocks), [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      T* dw_block = want_parameters ? partials.data() + 2 * block * n : nullptr;
      for (int64_t r = block * kRowsPerBlock; r < std::min(s.rows, (block + 1) * kRowsPerBlock); ++r) {
        const double m = static_cast<double>(mean[r]), istd = static_cast<double>(invstd[r]);
        if (dx != nullptr) {
          double sum_g = 0, sum_g_xhat = 0;
          row_sums_range(dy + r * n, x + r * n, weight, n, m, istd, sum_g, sum_g_xhat);
          const double mean_g = sum_g / static_cast<double>(n), proj = istd * sum_g_xhat / static_cast<double>(n);
          dx_range(dy + r * n, x + r * n, weight, dx + r * n, n, static_cast<T>(m), static_cast<T>(mean_g),
                   static_cast<T>(proj), static_cast<T>(istd));
        }
        if (want_parameters) {
          parameter_sums_range(dy + r * n, x + r * n, n, static_cast<T>(m), static_cast<T>(istd), dw_block,
                               dw_block + n);
        }
      }
    }
  });
  if (!want_parameters) return;
  parallel_ranges(n, threads_for(blocks * n, n / kMinColumnsPerThread), [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      double dw = 0, db = 0;
      for (int64_t block = 0; block < blocks; ++block) {
        dw += static_cast<double>(partials[static_cast<size_t>(2 * block * n + j)]);
        db += static_cast<double>(partials[static_cast<size_t>(2 * block * n + n + j)]);
      }
      if (dweight != nullptr) dweight[j] = static_cast<T>(dw);
      if (dbias != nullptr) dbias[j] = static_cast<T>(db);
    }
  });
}

#define EMBER_INSTANTIATE(T)                                                                                     \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, double, const LayerNormShape&); \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,            \
                                       const LayerNormShape&);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cpu
