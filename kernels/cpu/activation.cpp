#include "kernels/cpu/activation.h"

#include <omp.h>

#include "kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Below this many elements a loop stays on the calling thread (the fork costs more).
constexpr int64_t kParallelElements = 1 << 16;

int threads_for(int64_t n) {
  return (n >= kParallelElements && !omp_in_parallel()) ? get_num_threads() : 1;
}

}  // namespace

template <class T>
EMBER_VECTOR_CLONES void relu_forward(const T* x, T* y, int64_t n) {
#pragma omp parallel for simd num_threads(threads_for(n)) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
}

template <class T>
EMBER_VECTOR_CLONES void relu_backward(const T* dy, const T* y, T* dx, int64_t n) {
#pragma omp parallel for simd num_threads(threads_for(n)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    // dy is read on both sides of the select: a read under the condition kept GCC from
    // vectorising, and the branch it made instead mispredicted on every other element (10x slower
    // than relu_forward).
    const T g = dy[i];
    dx[i] = y[i] > T(0) ? g : T(0);
  }
}

template void relu_forward<float>(const float*, float*, int64_t);
template void relu_forward<double>(const double*, double*, int64_t);
template void relu_backward<float>(const float*, const float*, float*, int64_t);
template void relu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace ember::kernels::cpu
