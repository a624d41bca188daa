#include "ember/kernels/cpu/loss.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ember/kernels/cpu/threading.h"
#include "ember/kernels/cpu/vector_math.h"

namespace ember::kernels::cpu {
namespace {

int threads_for(int64_t rows, int64_t cols) {
  return (rows > 1 && rows * cols >= 32768 && !omp_in_parallel()) ? get_num_threads() : 1;
}

// dx[i] = 2 (x[i] - t[i]) * g(i) (and dt[i] = -dx[i] with kTarget), g(i) a scalar or grad[i].
template <class T, bool kTarget, class Grad>
void mse_backward_loop(const T* x, const T* t, Grad g, T* dx, T* dt, int64_t n) {
#pragma omp parallel for num_threads(threads_for(n, 1)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const T d = T(2) * (x[i] - t[i]) * g(i);
    dx[i] = d;
    if constexpr (kTarget) dt[i] = -d;
  }
}

// exp that vectorises for float (kernels/cpu/vector_math.h: std::exp is a call per element, which
// kept every softmax loop scalar); double keeps std::exp (its tests hold 1e-10).
inline float exp_of(float x) { return vmath::exp(x); }
inline double exp_of(double x) { return std::exp(x); }

// Softmax of one contiguous row (inner == 1). always_inline: the float clones below take the loops
// in whole (see threading.h).
template <class T>
[[gnu::always_inline]] inline void softmax_row(const T* x, T* y, int64_t n, bool log) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 1; j < n; ++j) m = x[j] > m ? x[j] : m;
  // The sums are reassociated (simd reduction): a fixed order for a given build and CPU (the
  // clone's vector width).
  if (log) {
    T sum = T(0);
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) sum += exp_of(x[j] - m);
    const T shift = m + std::log(sum);
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] - shift;
    return;
  }
  T sum = T(0);
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const T e = exp_of(x[j] - m);
    y[j] = e;
    sum += e;
  }
  const T scale = T(1) / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] *= scale;
}

template <class T>
[[gnu::always_inline]] inline void softmax_row_backward(const T* dy, const T* y, T* dx, int64_t n, bool log) {
  T sum = T(0);
  if (log) {
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) sum += dy[j];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dx[j] = dy[j] - exp_of(y[j]) * sum;
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < n; ++j) sum += dy[j] * y[j];
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dx[j] = y[j] * (dy[j] - sum);
  }
}

// inner > 1: softmax down the columns of one [size, inner] slab, kChunk columns at a time, each
// step of the reduction a contiguous run across the columns (which vectorises). The tasks are
// (slab, chunk) pairs, so a few large slabs still spread over the threads.
constexpr int64_t kChunk = 256;

template <class Body>
void for_each_chunk(const SoftmaxShape& s, const Body& body) {
  const int64_t chunks = (s.inner + kChunk - 1) / kChunk, tasks = s.outer * chunks;
  const int threads = (tasks > 1 && s.numel() >= 32768 && !omp_in_parallel()) ? get_num_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t o = task / chunks, i0 = (task % chunks) * kChunk;
    body(o * s.size * s.inner + i0, std::min(kChunk, s.inner - i0));
  }
}

// Softmax down w <= kChunk columns of n rows, `stride` apart.
template <class T>
[[gnu::always_inline]] inline void softmax_chunk(const T* in, T* out, int64_t n, int64_t stride, int64_t w, bool log) {
  T m[kChunk], sum[kChunk];
  for (int64_t i = 0; i < w; ++i) m[i] = in[i];
  for (int64_t k = 1; k < n; ++k) {
    const T* row = in + k * stride;
#pragma omp simd
    for (int64_t i = 0; i < w; ++i) m[i] = row[i] > m[i] ? row[i] : m[i];
  }
  for (int64_t i = 0; i < w; ++i) sum[i] = T(0);
  for (int64_t k = 0; k < n; ++k) {
    const T* row = in + k * stride;
    T* dst = out + k * stride;
#pragma omp simd
    for (int64_t i = 0; i < w; ++i) {
      const T e = exp_of(row[i] - m[i]);
      if (!log) dst[i] = e;  // y may alias x: row[i] is read before it is overwritten
      sum[i] += e;
    }
  }
  if (log) {
    for (int64_t i = 0; i < w; ++i) m[i] += std::log(sum[i]);  // the shift
    for (int64_t k = 0; k < n; ++k) {
      const T* row = in + k * stride;
      T* dst = out + k * stride;
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) dst[i] = row[i] - m[i];
    }
  } else {
    for (int64_t i = 0; i < w; ++i) sum[i] = T(1) / sum[i];
    for (int64_t k = 0; k < n; ++k) {
      T* dst = out + k * stride;
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) dst[i] *= sum[i];
    }
  }
}

// The gradient of softmax_chunk.
template <class T>
[[gnu::always_inline]] inline void softmax_chunk_backward(const T* dy, const T* y, T* dx, int64_t n, int64_t stride,
                                                          int64_t w, bool log) {
  T sum[kChunk];
  for (int64_t i = 0; i < w; ++i) sum[i] = T(0);
  for (int64_t k = 0; k < n; ++k) {
    const T* g = dy + k * stride;
    const T* out = y + k * stride;
    if (log) {
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) sum[i] += g[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) sum[i] += g[i] * out[i];
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    const T* g = dy + k * stride;
    const T* out = y + k * stride;
    T* d = dx + k * stride;
    if (log) {
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) d[i] = g[i] - exp_of(out[i]) * sum[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < w; ++i) d[i] = out[i] * (g[i] - sum[i]);
    }
  }
}

// float: AVX-512 / AVX2 / baseline clones (threading.h). The default build targets x86-64 without
// AVX, and these loops (the exp polynomial, the reductions) are compute-bound: at 4 floats a time
// softmax ran at half libtorch's speed, at 16 about 4x faster. Per element the clones agree (no
// contraction under -std=c++20); only the order of the simd sums follows the vector width.
// double: the plain loops.
EMBER_VECTOR_CLONES void row_forward(const float* x, float* y, int64_t n, bool log) { softmax_row(x, y, n, log); }
void row_forward(const double* x, double* y, int64_t n, bool log) { softmax_row(x, y, n, log); }
EMBER_VECTOR_CLONES void row_backward(const float* dy, const float* y, float* dx, int64_t n, bool log) {
  softmax_row_backward(dy, y, dx, n, log);
}
void row_backward(const double* dy, const double* y, double* dx, int64_t n, bool log) {
  softmax_row_backward(dy, y, dx, n, log);
}
EMBER_VECTOR_CLONES void chunk_forward(const float* x, float* y, int64_t n, int64_t stride, int64_t w, bool log) {
  softmax_chunk(x, y, n, stride, w, log);
}
void chunk_forward(const double* x, double* y, int64_t n, int64_t stride, int64_t w, bool log) {
  softmax_chunk(x, y, n, stride, w, log);
}
EMBER_VECTOR_CLONES void chunk_backward(const float* dy, const float* y, float* dx, int64_t n, int64_t stride,
                                        int64_t w, bool log) {
  softmax_chunk_backward(dy, y, dx, n, stride, w, log);
}
void chunk_backward(const double* dy, const double* y, double* dx, int64_t n, int64_t stride, int64_t w, bool log) {
  softmax_chunk_backward(dy, y, dx, n, stride, w, log);
}

template <class T>
void softmax_columns(const T* x, T* y, const SoftmaxShape& s) {
  for_each_chunk(s,
                 [&](int64_t offset, int64_t w) { chunk_forward(x + offset, y + offset, s.size, s.inner, w, s.log); });
}

template <class T>
void softmax_columns_backward(const T* dy, const T* y, T* dx, const SoftmaxShape& s) {
  for_each_chunk(s, [&](int64_t offset, int64_t w) {
    chunk_backward(dy + offset, y + offset, dx + offset, s.size, s.inner, w, s.log);
  });
}

// Where row r of a ClassLossShape starts, and the step between its classes.
inline int64_t row_base(const ClassLossShape& s, int64_t r) {
  return s.inner == 1 ? r * s.classes : (r / s.inner) * s.classes * s.inner + r % s.inner;
}

inline bool valid_label(int64_t t, int64_t classes) { return t >= 0 && t < classes; }

template <class T>
T nan_value() { return std::numeric_limits<T>::quiet_NaN(); }

// The loss of one row from its log-probabilities lp[c * stride] (cross-entropy's formula; e = 0
// is nll's), and its weight.
template <class T>
void class_row_loss(const T* lp, int64_t stride, int64_t t, const T* weight, const ClassLossShape& s, T* loss,
                    T* row_weight) {
  if (t == s.ignore_index) {
    *loss = T(0);
    *row_weight = T(0);
    return;
  }
  if (!valid_label(t, s.classes)) {
    *loss = nan_value<T>();
    *row_weight = nan_value<T>();
    return;
  }
  const T e = static_cast<T>(s.label_smoothing);
  const T wt = weight != nullptr ? weight[t] : T(1);
  T l = -(T(1) - e) * wt * lp[t * stride];
  if (s.label_smoothing != 0.0) {
    T smooth = T(0);
    if (weight != nullptr) {
      for (int64_t c = 0; c < s.classes; ++c) smooth += weight[c] * lp[c * stride];
    } else {
      for (int64_t c = 0; c < s.classes; ++c) smooth += lp[c * stride];
    }
    l -= e / static_cast<T>(s.classes) * smooth;
  }
  *loss = l;
  *row_weight = wt;
}

int threads_for_rows(const ClassLossShape& s) { return threads_for(s.rows(), s.classes); }

}  // namespace

template <class T>
void softmax_forward(const T* x, T* y, const SoftmaxShape& s) {
  if (s.numel() == 0) return;
  if (s.inner != 1) return softmax_columns(x, y, s);
  const int64_t rows = s.outer, n = s.size;
#pragma omp parallel for num_threads(threads_for(rows, n)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) row_forward(x + i * n, y + i * n, n, s.log);
}

template <class T>
void softmax_backward(const T* dy, const T* y, T* dx, const SoftmaxShape& s) {
  if (s.numel() == 0) return;
  if (s.inner != 1) return softmax_columns_backward(dy, y, dx, s);
  const int64_t rows = s.outer, n = s.size;
#pragma omp parallel for num_threads(threads_for(rows, n)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) row_backward(dy + i * n, y + i * n, dx + i * n, n, s.log);
}

template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, const T* weight, T* loss_rows, T* row_weight,
                      const ClassLossShape& s) {
  ClassLossShape plain = s;
  plain.label_smoothing = 0.0;
  for (int64_t r = 0; r < s.rows(); ++r) {
    class_row_loss(logp + row_base(s, r), s.inner, target[r], weight, plain, loss_rows + r, row_weight + r);
  }
}

template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, const T* weight, T* dlogp,
                       const ClassLossShape& s) {
  const int64_t n = s.numel();
#pragma omp parallel for num_threads(threads_for(n, 1)) schedule(static)
  for (int64_t k = 0; k < n; ++k) dlogp[k] = T(0);
  for (int64_t r = 0; r < s.rows(); ++r) {
    const int64_t t = target[r];
    if (t == s.ignore_index) continue;
    T* d = dlogp + row_base(s, r);
    if (!valid_label(t, s.classes)) {
      for (int64_t c = 0; c < s.classes; ++c) d[c * s.inner] = nan_value<T>();
      continue;
    }
    d[t * s.inner] = -(weight != nullptr ? weight[t] : T(1)) * grad_rows[r];
  }
}

template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, const T* weight, T* log_probs, T* loss_rows,
                           T* row_weight, const ClassLossShape& s) {
  const int64_t rows = s.rows(), cols = s.classes;
  if (rows == 0 || cols == 0) return;
  if (s.inner == 1) {  // fused: each row's loss while the row is in cache
#pragma omp parallel for num_threads(threads_for_rows(s)) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      softmax_row(logits + r * cols, log_probs + r * cols, cols, /*log=*/true);
      class_row_loss(log_probs + r * cols, 1, target[r], weight, s, loss_rows + r, row_weight + r);
    }
    return;
  }
  softmax_columns(logits, log_probs, SoftmaxShape{.outer = s.outer, .size = cols, .inner = s.inner, .log = true});
#pragma omp parallel for num_threads(threads_for_rows(s)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    class_row_loss(log_probs + row_base(s, r), s.inner, target[r], weight, s, loss_rows + r, row_weight + r);
  }
}

template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* weight, const T* weight_sum,
                            const T* grad_rows, T* dlogits, const ClassLossShape& s) {
  const int64_t rows = s.rows(), cols = s.classes, stride = s.inner;
  const T e = static_cast<T>(s.label_smoothing);
  const T total = weight != nullptr && s.label_smoothing != 0.0 ? *weight_sum : static_cast<T>(cols);
#pragma omp parallel for num_threads(threads_for_rows(s)) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = row_base(s, r), t = target[r];
    const T* lp = log_probs + base;
    T* d = dlogits + base;
    if (t == s.ignore_index || !valid_label(t, cols)) {
      const T fill = t == s.ignore_index ? T(0) : nan_value<T>();
      for (int64_t c = 0; c < cols; ++c) d[c * stride] = fill;
      continue;
    }
    // dx_c = p_c * (a + b * W) - b * w_c - a * [c == t], a = (1 - e) w_t g, b = e g / C.
    const T g = grad_rows[r];
    const T a = (T(1) - e) * (weight != nullptr ? weight[t] : T(1)) * g;
    const T b = e / static_cast<T>(cols) * g;
    const T scale = a + b * total;
    if (weight != nullptr) {
      for (int64_t c = 0; c < cols; ++c) d[c * stride] = exp_of(lp[c * stride]) * scale - b * weight[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) d[c * stride] = exp_of(lp[c * stride]) * scale - b;
    }
    d[t * stride] -= a;
  }
}

template <class T>
void mse_loss_forward(const T* x, const T* t, T* out, int64_t n, bool reduce, double scale) {
  if (!reduce) {
#pragma omp parallel for num_threads(threads_for(n, 1)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T d = x[i] - t[i];
      out[i] = d * d;
    }
    return;
  }
  double s = 0;  // in order, on one thread: the same bits for every thread count
  for (int64_t i = 0; i < n; ++i) {
    const T d = x[i] - t[i];
    s += static_cast<double>(d * d);
  }
  out[0] = static_cast<T>(scale * s);
}

template <class T>
void mse_loss_backward(const T* x, const T* t, const T* grad, bool grad_is_scalar, double scale, T* dx,
                       T* dt, int64_t n) {
  // The gradient's kind and dt's presence are settled here, outside the element loop.
  auto run = [&](auto g) {
    if (dt != nullptr) mse_backward_loop<T, true>(x, t, g, dx, dt, n);
    else mse_backward_loop<T, false>(x, t, g, dx, dt, n);
  };
  if (grad_is_scalar) {
    const T g = static_cast<T>(scale) * grad[0];
    run([g](int64_t) { return g; });
  } else {
    run([grad](int64_t i) { return grad[i]; });
  }
}

#define EMBER_INSTANTIATE_LOSS(T)                                                                       \
  template void softmax_forward<T>(const T*, T*, const SoftmaxShape&);                                  \
  template void softmax_backward<T>(const T*, const T*, T*, const SoftmaxShape&);                       \
  template void nll_loss_forward<T>(const T*, const int64_t*, const T*, T*, T*, const ClassLossShape&); \
  template void nll_loss_backward<T>(const T*, const int64_t*, const T*, T*, const ClassLossShape&);    \
  template void cross_entropy_forward<T>(const T*, const int64_t*, const T*, T*, T*, T*,                \
                                         const ClassLossShape&);                                        \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, const T*, const T*, T*,   \
                                          const ClassLossShape&);                                       \
  template void mse_loss_forward<T>(const T*, const T*, T*, int64_t, bool, double);                     \
  template void mse_loss_backward<T>(const T*, const T*, const T*, bool, double, T*, T*, int64_t);
EMBER_INSTANTIATE_LOSS(float)
EMBER_INSTANTIATE_LOSS(double)
#undef EMBER_INSTANTIATE_LOSS

}  // namespace ember::kernels::cpu
