#include "ember/kernels/cpu/moments.h"

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu::detail {
namespace {

template <class T>
[[gnu::always_inline]] inline double sum_loop(const T* x, int64_t n) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(x[i]);
  return acc;
}

template <class T>
[[gnu::always_inline]] inline double squared_deviation_loop(const T* x, int64_t n, double mean) {
  double acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    acc += d * d;
  }
  return acc;
}

}  // namespace

EMBER_VECTOR_CLONES double sum_in_double(const float* x, int64_t n) { return sum_loop(x, n); }
EMBER_VECTOR_CLONES double sum_in_double(const double* x, int64_t n) { return sum_loop(x, n); }
EMBER_VECTOR_CLONES double squared_deviation_sum(const float* x, int64_t n, double mean) {
  return squared_deviation_loop(x, n, mean);
}
EMBER_VECTOR_CLONES double squared_deviation_sum(const double* x, int64_t n, double mean) {
  return squared_deviation_loop(x, n, mean);
}

}  // namespace ember::kernels::cpu::detail
