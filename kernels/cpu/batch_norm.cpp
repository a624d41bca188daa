#include "ember/kernels/cpu/batch_norm.h"

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

// Channels are the unit of work: each thread owns whole channels (their sums are then taken in a
// fixed order, whatever the thread count). A small C therefore uses at most C threads.
int threads_for(const BatchNormShape& s) {
  if (s.numel() < kParallelElements || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(get_num_threads(), s.channels));
}

// The loops over one [spatial] plane of one channel, one function per element type so that
// EMBER_VECTOR_CLONES compiles each for AVX-512, AVX2 and the baseline (see threading.h);
// always_inline puts the loop into every clone. Sums are in double (see the header); the
// statistics' two passes are kernels/cpu/moments.h's.

// y = x * scale + shift.
template <class T>
[[gnu::always_inline]] inline void affine_loop(const T* x, T* y, int64_t n, T scale, T shift) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
}

// sum dy and sum dy * (x - mean), in double.
template <class T>
[[gnu::always_inline]] inline void gradient_sums_loop(const T* dy, const T* x, int64_t n, double mean,
                                                      double& sum_dy, double& sum_dy_xmu) {
  double a = 0, b = 0;
#pragma omp simd reduction(+ : a, b)
  for (int64_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(dy[i]);
    a += g;
    b += g * (static_cast<double>(x[i]) - mean);
  }
  sum_dy += a;
  sum_dy_xmu += b;
}

// dx = (dy - mean_dy - (x - mean) * proj) * k: the training backward.
template <class T>
[[gnu::always_inline]] inline void training_dx_loop(const T* dy, const T* x, T* dx, int64_t n, T mean, T mean_dy,
                                                    T proj, T k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] = (dy[i] - mean_dy - (x[i] - mean) * proj) * k;
}

// dx = dy * k: the evaluation backward.
template <class T>
[[gnu::always_inline]] inline void scale_loop(const T* dy, T* dx, int64_t n, T k) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * k;
}

#define EMBER_BATCH_NORM_LOOPS(T)                                                                              \
  EMBER_VECTOR_CLONES void affine_range(const T* x, T* y, int64_t n, T scale, T shift) {                      \
    affine_loop(x, y, n, scale, shift);                                                                        \
  }                                                                                                            \
  EMBER_VECTOR_CLONES void gradient_sums_range(const T* dy, const T* x, int64_t n, double mean, double& a,    \
                                               double& b) {                                                    \
    gradient_sums_loop(dy, x, n, mean, a, b);                                                                  \
  }                                                                                                            \
  EMBER_VECTOR_CLONES void training_dx_range(const T* dy, const T* x, T* dx, int64_t n, T mean, T mean_dy,    \
                                             T proj, T k) {                                                    \
    training_dx_loop(dy, x, dx, n, mean, mean_dy, proj, k);                                                    \
  }                                                                                                            \
  EMBER_VECTOR_CLONES void scale_range(const T* dy, T* dx, int64_t n, T k) { scale_loop(dy, dx, n, k); }
EMBER_BATCH_NORM_LOOPS(float)
EMBER_BATCH_NORM_LOOPS(double)
#undef EMBER_BATCH_NORM_LOOPS

// The offset of channel c's plane in batch element b.
inline int64_t plane(const BatchNormShape& s, int64_t b, int64_t c) { return (b * s.channels + c) * s.spatial; }

}  // namespace

template <class T>
void batch_norm_forward_training(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd,
                                 T* running_mean, T* running_var, double momentum, double eps,
                                 const BatchNormShape& s) {
  const int64_t n = s.per_channel();
#pragma omp parallel for num_threads(threads_for(s)) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    double sum = 0;
    for (int64_t b = 0; b < s.batch; ++b) sum += detail::sum_in_double(x + plane(s, b, c), s.spatial);
    const double mean = sum / static_cast<double>(n);
    double squares = 0;
    for (int64_t b = 0; b < s.batch; ++b) {
      squares += detail::squared_deviation_sum(x + plane(s, b, c), s.spatial, mean);
    }
    const double var = squares / static_cast<double>(n);
    const double invstd = 1.0 / std::sqrt(var + eps);
    save_mean[c] = static_cast<T>(mean);
    save_invstd[c] = static_cast<T>(invstd);
    if (running_mean != nullptr) {
      const double unbiased = squares / static_cast<double>(n - 1);
      running_mean[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mean);
      running_var[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_var[c]) + momentum * unbiased);
    }
    const double w = weight != nullptr ? static_cast<double>(weight[c]) : 1.0;
    const double shift = bias != nullptr ? static_cast<double>(bias[c]) : 0.0;
    const double scale = invstd * w;
    for (int64_t b = 0; b < s.batch; ++b) {
      affine_range(x + plane(s, b, c), y + plane(s, b, c), s.spatial, static_cast<T>(scale),
                   static_cast<T>(shift - mean * scale));
    }
  }
}

template <class T>
void batch_norm_forward_eval(const T* x, const T* mean, const T* var, const T* weight, const T* bias, T* y,
                             T* save_invstd, double eps, const BatchNormShape& s) {
  // The per-channel scale and shift first (C values, cheap), so that the pass over x can walk the
  // N*C planes in memory order and split them between threads evenly: going channel by channel
  // jumps between batch elements, and caps the threads at C.
  std::vector<T> scales(static_cast<size_t>(s.channels)), shifts(static_cast<size_t>(s.channels));
  for (int64_t c = 0; c < s.channels; ++c) {
    const double invstd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    if (save_invstd != nullptr) save_invstd[c] = static_cast<T>(invstd);
    const double w = weight != nullptr ? static_cast<double>(weight[c]) : 1.0;
    const double shift = bias != nullptr ? static_cast<double>(bias[c]) : 0.0;
    const double scale = invstd * w;
    scales[c] = static_cast<T>(scale);
    shifts[c] = static_cast<T>(shift - static_cast<double>(mean[c]) * scale);
  }
  const int64_t planes = s.batch * s.channels;
  const int threads = s.numel() < kParallelElements || omp_in_parallel()
                          ? 1
                          : static_cast<int>(std::min<int64_t>(get_num_threads(), planes));
  parallel_ranges(planes, threads, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p % s.channels;
      affine_range(x + p * s.spatial, y + p * s.spatial, s.spatial, scales[c], shifts[c]);
    }
  });
}

template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx,
                         T* dweight, T* dbias, bool training, const BatchNormShape& s) {
  const int64_t n = s.per_channel();
#pragma omp parallel for num_threads(threads_for(s)) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    const double m = static_cast<double>(mean[c]), istd = static_cast<double>(invstd[c]);
    double sum_dy = 0, sum_dy_xmu = 0;
    if (training || dweight != nullptr || dbias != nullptr) {
      for (int64_t b = 0; b < s.batch; ++b) {
        gradient_sums_range(dy + plane(s, b, c), x + plane(s, b, c), s.spatial, m, sum_dy, sum_dy_xmu);
      }
    }
    if (dweight != nullptr) dweight[c] = static_cast<T>(sum_dy_xmu * istd);
    if (dbias != nullptr) dbias[c] = static_cast<T>(sum_dy);
    if (dx == nullptr) continue;
    const double k = istd * (weight != nullptr ? static_cast<double>(weight[c]) : 1.0);
    if (training) {
      const double mean_dy = sum_dy / static_cast<double>(n);
      const double proj = sum_dy_xmu * istd * istd / static_cast<double>(n);
      for (int64_t b = 0; b < s.batch; ++b) {
        training_dx_range(dy + plane(s, b, c), x + plane(s, b, c), dx + plane(s, b, c), s.spatial,
                          static_cast<T>(m), static_cast<T>(mean_dy), static_cast<T>(proj), static_cast<T>(k));
      }
    } else {
      for (int64_t b = 0; b < s.batch; ++b) {
        scale_range(dy + plane(s, b, c), dx + plane(s, b, c), s.spatial, static_cast<T>(k));
      }
    }
  }
}

#define EMBER_INSTANTIATE(T)                                                                                    \
  template void batch_norm_forward_training<T>(const T*, const T*, const T*, T*, T*, T*, T*, T*, double, double, \
                                               const BatchNormShape&);                                         \
  template void batch_norm_forward_eval<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, double,      \
                                           const BatchNormShape&);                                             \
  template void batch_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, bool,       \
                                       const BatchNormShape&);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cpu
