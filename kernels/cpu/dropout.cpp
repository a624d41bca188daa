#include "ember/kernels/cpu/dropout.h"

#include <omp.h>

#include "ember/common/philox.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

int threads_for(int64_t n) { return (n >= 16384 && !omp_in_parallel()) ? get_num_threads() : 1; }

}  // namespace

template <class T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, double p, uint64_t seed,
                     uint64_t offset) {
  const T scale = p < 1.0 ? T(1.0 / (1.0 - p)) : T(0);
  const int64_t groups = (n + 3) / 4;  // one Philox block gives the draws of 4 elements
#pragma omp parallel for num_threads(threads_for(n)) schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    const philox::Block b = philox::philox4x32_10(seed, offset + static_cast<uint64_t>(g));
    const int64_t end = g * 4 + 4 < n ? g * 4 + 4 : n;
    for (int64_t i = g * 4; i < end; ++i) {
      // Same value as philox::uniform(seed, offset, i), computed once per block.
      const bool keep = static_cast<double>(philox::to_unit_float(b.v[i - g * 4])) > p;
      mask[i] = keep ? 1 : 0;
      y[i] = keep ? x[i] * scale : T(0);
    }
  }
}

namespace {

// One function per element type so that EMBER_VECTOR_CLONES can compile the loop for AVX-512,
// AVX2 and the baseline (see threading.h); always_inline puts the loop into every clone.
// clang vectorises it; g++ 12 turns the select on the uint8 mask into a branch and does not
// (it did not before the clones moved here either).
template <class T>
[[gnu::always_inline]] inline void dropout_backward_loop(const T* dy, const uint8_t* mask, T* dx, int64_t n,
                                                         T scale) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T g = dy[i] * scale;  // read unconditionally, so the select vectorises (see relu_backward)
    dx[i] = mask[i] ? g : T(0);
  }
}

EMBER_VECTOR_CLONES void dropout_backward_range(const float* dy, const uint8_t* mask, float* dx, int64_t n,
                                                float scale) {
  dropout_backward_loop(dy, mask, dx, n, scale);
}
EMBER_VECTOR_CLONES void dropout_backward_range(const double* dy, const uint8_t* mask, double* dx, int64_t n,
                                                double scale) {
  dropout_backward_loop(dy, mask, dx, n, scale);
}

}  // namespace

template <class T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, double p) {
  const T scale = p < 1.0 ? T(1.0 / (1.0 - p)) : T(0);
  parallel_ranges(n, threads_for(n), [&](int64_t begin, int64_t end) {
    dropout_backward_range(dy + begin, mask + begin, dx + begin, end - begin, scale);
  });
}

template void dropout_forward<float>(const float*, float*, uint8_t*, int64_t, double, uint64_t,
                                     uint64_t);
template void dropout_forward<double>(const double*, double*, uint8_t*, int64_t, double, uint64_t,
                                      uint64_t);
template void dropout_backward<float>(const float*, const uint8_t*, float*, int64_t, double);
template void dropout_backward<double>(const double*, const uint8_t*, double*, int64_t, double);

}  // namespace ember::kernels::cpu
