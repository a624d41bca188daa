// Dropout: one thread per Philox block (4 elements), exactly the CPU kernel's draw per element.
#include "ember/kernels/cuda/dropout.h"

#include <algorithm>

#include "ember/common/cuda_check.h"
#include "ember/common/philox.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t work) { return detail::grid_for(work, kThreads, 8192); }

// The scale as the CPU computes it, so kept values match bit for bit.
template <class T>
T keep_scale(double p) {
  return p < 1.0 ? T(1.0 / (1.0 - p)) : T(0);
}

// Group g covers elements 4g .. 4g+3 (the last group may be partial) and uses counter offset + g,
// as kernels/cpu/dropout.cpp does.
template <class T>
__global__ void dropout_forward_kernel(const T* x, T* y, uint8_t* mask, int64_t n, double p, T scale,
                                       uint64_t seed, uint64_t offset) {
  const int64_t groups = (n + 3) / 4;
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const philox::Block b = philox::philox4x32_10(seed, offset + static_cast<uint64_t>(g));
    const int64_t begin = g * 4;
    const int64_t end = begin + 4 < n ? begin + 4 : n;
    for (int64_t i = begin; i < end; ++i) {
      const bool keep = static_cast<double>(philox::to_unit_float(b.v[i - begin])) > p;
      mask[i] = keep ? 1 : 0;
      y[i] = keep ? x[i] * scale : T(0);
    }
  }
}

template <class T>
__global__ void dropout_backward_kernel(const T* dy, const uint8_t* mask, T* dx, int64_t n, T scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = mask[i] ? dy[i] * scale : T(0);
  }
}

}  // namespace

template <class T>
void dropout_forward(const T* x, T* y, uint8_t* mask, int64_t n, double p, uint64_t seed,
                     uint64_t offset, cudaStream_t stream) {
  if (n <= 0) return;
  EMBER_LAUNCH(blocks_for((n + 3) / 4), kThreads, 0, stream, dropout_forward_kernel<T>)(
      x, y, mask, n, p, keep_scale<T>(p), seed, offset);
  EMBER_CUDA_LAUNCH_CHECK("dropout_forward");
}

template <class T>
void dropout_backward(const T* dy, const uint8_t* mask, T* dx, int64_t n, double p, cudaStream_t stream) {
  if (n <= 0) return;
  EMBER_LAUNCH(blocks_for(n), kThreads, 0, stream, dropout_backward_kernel<T>)(dy, mask, dx, n, keep_scale<T>(p));
  EMBER_CUDA_LAUNCH_CHECK("dropout_backward");
}

template void dropout_forward<float>(const float*, float*, uint8_t*, int64_t, double, uint64_t, uint64_t,
                                     cudaStream_t);
template void dropout_forward<double>(const double*, double*, uint8_t*, int64_t, double, uint64_t, uint64_t,
                                      cudaStream_t);
template void dropout_backward<float>(const float*, const uint8_t*, float*, int64_t, double, cudaStream_t);
template void dropout_backward<double>(const double*, const uint8_t*, double*, int64_t, double, cudaStream_t);

}  // namespace ember::kernels::cuda
