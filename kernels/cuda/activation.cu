// relu forward / backward: grid-stride loops, float4 loads for aligned float data.
#include "ember/kernels/cuda/activation.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to cover `work` items once, capped: the loops are grid-stride.
unsigned blocks_for(int64_t work) { return detail::grid_for(work, kThreads, 8192); }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T>
__device__ __forceinline__ T relu_value(T v) {
  return v < T(0) ? T(0) : v;  // NaN < 0 is false: NaN passes through
}

template <class T>
__device__ __forceinline__ T relu_grad(T dy, T y) {
  return y > T(0) ? dy : T(0);
}

template <class T>
__global__ void relu_forward_kernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = relu_value(x[i]);
  }
}

// Elements [0, 4 * n4) as float4, then the n % 4 tail elements one per thread.
__global__ void relu_forward_float4_kernel(const float* x, float* y, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x4[i];
    v.x = relu_value(v.x);
    v.y = relu_value(v.y);
    v.z = relu_value(v.z);
    v.w = relu_value(v.w);
    y4[i] = v;
  }
  const int64_t tail = n - 4 * n4;  // 0..3
  if (first < tail) y[4 * n4 + first] = relu_value(x[4 * n4 + first]);
}

template <class T>
__global__ void relu_backward_kernel(const T* dy, const T* y, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = relu_grad(dy[i], y[i]);
  }
}

__global__ void relu_backward_float4_kernel(const float* dy, const float* y, float* dx, int64_t n) {
  const int64_t n4 = n / 4;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const float4* dy4 = reinterpret_cast<const float4*>(dy);
  const float4* y4 = reinterpret_cast<const float4*>(y);
  float4* dx4 = reinterpret_cast<float4*>(dx);
  for (int64_t i = first; i < n4; i += step) {
    const float4 g = dy4[i], out = y4[i];
    float4 d;
    d.x = relu_grad(g.x, out.x);
    d.y = relu_grad(g.y, out.y);
    d.z = relu_grad(g.z, out.z);
    d.w = relu_grad(g.w, out.w);
    dx4[i] = d;
  }
  const int64_t tail = n - 4 * n4;
  if (first < tail) dx[4 * n4 + first] = relu_grad(dy[4 * n4 + first], y[4 * n4 + first]);
}

}  // namespace

template <class T>
void relu_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(x) && aligned16(y)) {
      // Every thread of the grid exists at least once, so the (< 4) tail threads are there.
      EMBER_LAUNCH(blocks_for((n + 3) / 4), kThreads, 0, stream, relu_forward_float4_kernel)(x, y, n);
      EMBER_CUDA_LAUNCH_CHECK("relu_forward");
      return;
    }
  }
  EMBER_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_forward_kernel<T>)(x, y, n);
  EMBER_CUDA_LAUNCH_CHECK("relu_forward");
}

template <class T>
void relu_backward(const T* dy, const T* y, T* dx, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(dy) && aligned16(y) && aligned16(dx)) {
      EMBER_LAUNCH(blocks_for((n + 3) / 4), kThreads, 0, stream, relu_backward_float4_kernel)(dy, y, dx, n);
      EMBER_CUDA_LAUNCH_CHECK("relu_backward");
      return;
    }
  }
  EMBER_LAUNCH(blocks_for(n), kThreads, 0, stream, relu_backward_kernel<T>)(dy, y, dx, n);
  EMBER_CUDA_LAUNCH_CHECK("relu_backward");
}

template void relu_forward<float>(const float*, float*, int64_t, cudaStream_t);
template void relu_forward<double>(const double*, double*, int64_t, cudaStream_t);
template void relu_backward<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void relu_backward<double>(const double*, const double*, double*, int64_t, cudaStream_t);

}  // namespace ember::kernels::cuda
