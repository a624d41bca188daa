#include "ember/kernels/cpu/loss.h"

#include <omp.h>

#include <cmath>

#include "ember/kernels/cpu/threading.h"

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

template <class T>
void log_softmax_row(const T* x, T* y, int64_t cols) {
  T m = x[0];
  for (int64_t j = 1; j < cols; ++j) m = x[j] > m ? x[j] : m;
  T sum = T(0);
  for (int64_t j = 0; j < cols; ++j) sum += std::exp(x[j] - m);
  const T shift = m + std::log(sum);
  for (int64_t j = 0; j < cols; ++j) y[j] = x[j] - shift;
}

}  // namespace

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols) {
#pragma omp parallel for num_threads(threads_for(rows, cols)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) log_softmax_row(x + i * cols, y + i * cols, cols);
}

template <class T>
void log_softmax_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols) {
#pragma omp parallel for num_threads(threads_for(rows, cols)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const T* g = dy + i * cols;
    const T* out = y + i * cols;
    T* d = dx + i * cols;
    T sum = T(0);
    for (int64_t j = 0; j < cols; ++j) sum += g[j];
    for (int64_t j = 0; j < cols; ++j) d[j] = g[j] - std::exp(out[j]) * sum;
  }
}

template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, T* loss_rows, int64_t rows,
                      int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) loss_rows[i] = -logp[i * cols + target[i]];
}

template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, T* dlogp, int64_t rows,
                       int64_t cols) {
#pragma omp parallel for num_threads(threads_for(rows, cols)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    T* d = dlogp + i * cols;
    for (int64_t j = 0; j < cols; ++j) d[j] = T(0);
    d[target[i]] = -grad_rows[i];
  }
}

template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* log_probs_out, T* loss_rows,
                           int64_t rows, int64_t cols) {
#pragma omp parallel for num_threads(threads_for(rows, cols)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    log_softmax_row(logits + i * cols, log_probs_out + i * cols, cols);
    loss_rows[i] = -log_probs_out[i * cols + target[i]];
  }
}

template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* grad_rows,
                            T* dlogits, int64_t rows, int64_t cols) {
#pragma omp parallel for num_threads(threads_for(rows, cols)) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const T* lp = log_probs + i * cols;
    T* d = dlogits + i * cols;
    const T g = grad_rows[i];
    for (int64_t j = 0; j < cols; ++j) d[j] = std::exp(lp[j]) * g;
    d[target[i]] = (std::exp(lp[target[i]]) - T(1)) * g;
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

#define EMBER_INSTANTIATE_LOSS(T)                                                                \
  template void log_softmax_forward<T>(const T*, T*, int64_t, int64_t);                          \
  template void log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t);               \
  template void nll_loss_forward<T>(const T*, const int64_t*, T*, int64_t, int64_t);             \
  template void nll_loss_backward<T>(const T*, const int64_t*, T*, int64_t, int64_t);            \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, T*, int64_t, int64_t);    \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, T*, int64_t,       \
                                          int64_t);                                              \
  template void mse_loss_forward<T>(const T*, const T*, T*, int64_t, bool, double);              \
  template void mse_loss_backward<T>(const T*, const T*, const T*, bool, double, T*, T*, int64_t);
EMBER_INSTANTIATE_LOSS(float)
EMBER_INSTANTIATE_LOSS(double)
#undef EMBER_INSTANTIATE_LOSS

}  // namespace ember::kernels::cpu
