#include "ember/kernels/cpu/batch_norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/kernels/cpu/moments.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [batch norm in memory order]. Every pass walks x (and dy, dx, y) in memory order, image by
// image and within an image channel by channel, and the batch is cut into kShards fixed shards of
// images: the statistics' sums (in double) are taken per shard and channel, then added shard
// after shard, so the bits do not depend on the thread count. Threads take the shards in
// contiguous ranges, so with two threads each reads and writes only the half of the batch the
// convolutions and ReLUs on its own core wrote (Note [image shards] in conv2d_direct_weight.cpp).
// The passes had gone channel by channel, each over every image: one [spatial] plane at a time,
// 3 KB at a 50 KB stride on ResNet-8's first planes, which the prefetchers follow badly (the
// training forward ran at 3.5x its 1-thread speed on 2 threads), and on two threads each thread
// read every image.
constexpr int64_t kShards = 8;

// Below this many elements a call stays on the calling thread (the fork costs more).
constexpr int64_t kParallelElements = 1 << 15;

int64_t shard_count(const BatchNormShape& s) { return std::clamp<int64_t>(s.batch, 1, kShards); }

// Threads for a pass over s split into `units` contiguous pieces (shards, or planes).
int threads_for(const BatchNormShape& s, int64_t units) {
  if (s.numel() < kParallelElements || omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(get_num_threads(), units));
}

// body(shard, first image, end image) for each shard, shards split between threads in
// contiguous ranges.
template <class Body>
void for_each_shard(const BatchNormShape& s, const Body& body) {
  const int64_t shards = shard_count(s);
  parallel_ranges(shards, threads_for(s, shards), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i, s.batch * i / shards, s.batch * (i + 1) / shards);
  });
}

// The offset of channel c's plane in batch element b.
inline int64_t plane(const BatchNormShape& s, int64_t b, int64_t c) { return (b * s.channels + c) * s.spatial; }

// Per channel, the shards' partial sums partial[i * C + c] added in shard order.
double shard_total(const std::vector<double>& partial, int64_t c, const BatchNormShape& s) {
  double total = 0;
  for (int64_t i = 0; i < shard_count(s); ++i) total += partial[static_cast<size_t>(i * s.channels + c)];
  return total;
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

}  // namespace

template <class T>
void batch_norm_forward_training(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd,
                                 T* running_mean, T* running_var, double momentum, double eps,
                                 const BatchNormShape& s) {
  const int64_t n = s.per_channel(), C = s.channels;
  std::vector<double> partial(static_cast<size_t>(shard_count(s) * C)), mean(static_cast<size_t>(C));
  // Two passes (Note [batch norm in memory order]): the mean, then the squared deviations from it.
  for_each_shard(s, [&](int64_t i, int64_t b0, int64_t b1) {
    double* sums = partial.data() + i * C;
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = 0; c < C; ++c) sums[c] += detail::sum_in_double(x + plane(s, b, c), s.spatial);
    }
  });
  for (int64_t c = 0; c < C; ++c) mean[c] = shard_total(partial, c, s) / static_cast<double>(n);
  std::fill(partial.begin(), partial.end(), 0.0);
  for_each_shard(s, [&](int64_t i, int64_t b0, int64_t b1) {
    double* squares = partial.data() + i * C;
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = 0; c < C; ++c) {
        squares[c] += detail::squared_deviation_sum(x + plane(s, b, c), s.spatial, mean[c]);
      }
    }
  });
  std::vector<T> scales(static_cast<size_t>(C)), shifts(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double squares = shard_total(partial, c, s);
    const double invstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
    save_mean[c] = static_cast<T>(mean[c]);
    save_invstd[c] = static_cast<T>(invstd);
    if (running_mean != nullptr) {
      const double unbiased = squares / static_cast<double>(n - 1);
      running_mean[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mean[c]);
      running_var[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_var[c]) + momentum * unbiased);
    }
    const double w = weight != nullptr ? static_cast<double>(weight[c]) : 1.0;
    const double shift = bias != nullptr ? static_cast<double>(bias[c]) : 0.0;
    scales[c] = static_cast<T>(invstd * w);
    shifts[c] = static_cast<T>(shift - mean[c] * invstd * w);
  }
  for_each_shard(s, [&](int64_t, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = 0; c < C; ++c) {
        affine_range(x + plane(s, b, c), y + plane(s, b, c), s.spatial, scales[c], shifts[c]);
      }
    }
  });
}

template <class T>
void batch_norm_forward_eval(const T* x, const T* mean, const T* var, const T* weight, const T* bias, T* y,
                             T* save_invstd, double eps, const BatchNormShape& s) {
  // The per-channel scale and shift first (C values, cheap), so that the pass over x can walk the
  // N*C planes in memory order and split them between threads evenly (no sums: no shards).
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
  parallel_ranges(planes, threads_for(s, planes), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p % s.channels;
      affine_range(x + p * s.spatial, y + p * s.spatial, s.spatial, scales[c], shifts[c]);
    }
  });
}

template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx,
                         T* dweight, T* dbias, bool training, const BatchNormShape& s) {
  const int64_t n = s.per_channel(), C = s.channels;
  std::vector<double> sum_dy(static_cast<size_t>(shard_count(s) * C)), sum_dy_xmu(sum_dy.size());
  if (training || dweight != nullptr || dbias != nullptr) {
    for_each_shard(s, [&](int64_t i, int64_t b0, int64_t b1) {
      double* a = sum_dy.data() + i * C;
      double* g = sum_dy_xmu.data() + i * C;
      for (int64_t b = b0; b < b1; ++b) {
        for (int64_t c = 0; c < C; ++c) {
          gradient_sums_range(dy + plane(s, b, c), x + plane(s, b, c), s.spatial, static_cast<double>(mean[c]),
                              a[c], g[c]);
        }
      }
    });
  }
  // Per channel: dx = (dy - mean_dy - (x - mean) * proj) * k in training, dy * k in evaluation.
  std::vector<T> means_dy(static_cast<size_t>(C)), projs(static_cast<size_t>(C)), ks(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double istd = static_cast<double>(invstd[c]);
    const double total_dy = shard_total(sum_dy, c, s), total_dy_xmu = shard_total(sum_dy_xmu, c, s);
    if (dweight != nullptr) dweight[c] = static_cast<T>(total_dy_xmu * istd);
    if (dbias != nullptr) dbias[c] = static_cast<T>(total_dy);
    ks[c] = static_cast<T>(istd * (weight != nullptr ? static_cast<double>(weight[c]) : 1.0));
    means_dy[c] = static_cast<T>(total_dy / static_cast<double>(n));
    projs[c] = static_cast<T>(total_dy_xmu * istd * istd / static_cast<double>(n));
  }
  if (dx == nullptr) return;
  for_each_shard(s, [&](int64_t, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t p = plane(s, b, c);
        if (training) {
          training_dx_range(dy + p, x + p, dx + p, s.spatial, mean[c], means_dy[c], projs[c], ks[c]);
        } else {
          scale_range(dy + p, dx + p, s.spatial, ks[c]);
        }
      }
    }
  });
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
