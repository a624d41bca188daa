// relu and the other activations (kernels/activation.h), forward / backward: grid-stride loops,
// float4 loads for aligned float data.
#include "ember/kernels/cuda/activation.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ember/common/error.h"

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


// --- sigmoid, tanh, gelu, silu, leaky_relu, elu, hardswish ----------------------------------
// The formulas of the CPU twins (kernels/cpu/activation.cpp), with CUDA's float and double math.
__device__ __forceinline__ float dev_exp(float x) { return expf(x); }
__device__ __forceinline__ double dev_exp(double x) { return ::exp(x); }
__device__ __forceinline__ float dev_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double dev_expm1(double x) { return ::expm1(x); }
__device__ __forceinline__ float dev_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double dev_tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float dev_erf(float x) { return erff(x); }
__device__ __forceinline__ double dev_erf(double x) { return ::erf(x); }

// PyTorch's constants: 1/sqrt(2); 1/sqrt(2 pi); sqrt(2/pi); the tanh form's cubic coefficient.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

template <Activation op, class T>
__device__ __forceinline__ T forward_value(T x, T param) {
  if constexpr (op == Activation::Sigmoid) {
    return T(1) / (T(1) + dev_exp(-x));
  } else if constexpr (op == Activation::Tanh) {
    return dev_tanh(x);
  } else if constexpr (op == Activation::Gelu) {
    return x * T(0.5) * (T(1) + dev_erf(x * T(kSqrtHalf)));
  } else if constexpr (op == Activation::GeluTanh) {
    const T inner = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
    return T(0.5) * x * (T(1) + dev_tanh(inner));
  } else if constexpr (op == Activation::Silu) {
    return x / (T(1) + dev_exp(-x));
  } else if constexpr (op == Activation::LeakyRelu) {
    return x > T(0) ? x : x * param;
  } else if constexpr (op == Activation::Elu) {
    return x > T(0) ? x : dev_expm1(x) * param;
  } else {
    static_assert(op == Activation::Hardswish);
    T clipped = x + T(3);
    clipped = clipped < T(0) ? T(0) : clipped;
    clipped = clipped > T(6) ? T(6) : clipped;
    return x * clipped / T(6);
  }
}

// dy * op'(s), s the forward's output (sigmoid, tanh) or input (the others).
template <Activation op, class T>
__device__ __forceinline__ T backward_value(T dy, T s, T param) {
  if constexpr (op == Activation::Sigmoid) {
    return dy * (T(1) - s) * s;
  } else if constexpr (op == Activation::Tanh) {
    return dy * (T(1) - s * s);
  } else if constexpr (op == Activation::Gelu) {
    const T cdf = T(0.5) * (T(1) + dev_erf(s * T(kSqrtHalf)));
    const T pdf = dev_exp(T(-0.5) * s * s) * T(kInvSqrt2Pi);
    return dy * (cdf + s * pdf);
  } else if constexpr (op == Activation::GeluTanh) {
    const T square = s * s;
    const T t = dev_tanh(T(kSqrt2OverPi) * (s + T(kGeluCubic) * square * s));
    const T inner_derivative = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * square);
    return dy * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * inner_derivative);
  } else if constexpr (op == Activation::Silu) {
    const T sigmoid = T(1) / (T(1) + dev_exp(-s));
    return dy * sigmoid * (T(1) + s * (T(1) - sigmoid));
  } else if constexpr (op == Activation::LeakyRelu) {
    return s > T(0) ? dy : dy * param;
  } else if constexpr (op == Activation::Elu) {
    return s > T(0) ? dy : dy * param * dev_exp(s);
  } else {
    static_assert(op == Activation::Hardswish);
    return s < T(-3) ? T(0) : (s < T(3) ? dy * (s / T(3) + T(0.5)) : dy);  // at exactly 3: dy
  }
}

template <Activation op, class T>
__global__ void activation_forward_kernel(const T* x, T* y, int64_t n, T param) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = forward_value<op>(x[i], param);
  }
}

// As relu_forward_float4_kernel: [0, 4 * n4) as float4, then the n % 4 tail one per thread.
template <Activation op>
__global__ void activation_forward_float4_kernel(const float* x, float* y, int64_t n, float param) {
  const int64_t n4 = n / 4;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (int64_t i = first; i < n4; i += step) {
    float4 v = x4[i];
    v.x = forward_value<op>(v.x, param);
    v.y = forward_value<op>(v.y, param);
    v.z = forward_value<op>(v.z, param);
    v.w = forward_value<op>(v.w, param);
    y4[i] = v;
  }
  const int64_t tail = n - 4 * n4;  // 0..3
  if (first < tail) y[4 * n4 + first] = forward_value<op>(x[4 * n4 + first], param);
}

template <Activation op, class T>
__global__ void activation_backward_kernel(const T* dy, const T* s, T* dx, int64_t n, T param) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = backward_value<op>(dy[i], s[i], param);
  }
}

template <Activation op>
__global__ void activation_backward_float4_kernel(const float* dy, const float* s, float* dx, int64_t n,
                                                  float param) {
  const int64_t n4 = n / 4;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const float4* dy4 = reinterpret_cast<const float4*>(dy);
  const float4* s4 = reinterpret_cast<const float4*>(s);
  float4* dx4 = reinterpret_cast<float4*>(dx);
  for (int64_t i = first; i < n4; i += step) {
    const float4 g = dy4[i], v = s4[i];
    float4 d;
    d.x = backward_value<op>(g.x, v.x, param);
    d.y = backward_value<op>(g.y, v.y, param);
    d.z = backward_value<op>(g.z, v.z, param);
    d.w = backward_value<op>(g.w, v.w, param);
    dx4[i] = d;
  }
  const int64_t tail = n - 4 * n4;
  if (first < tail) dx[4 * n4 + first] = backward_value<op>(dy[4 * n4 + first], s[4 * n4 + first], param);
}

template <Activation op, class T>
void launch_forward(const T* x, T* y, int64_t n, T param, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(y) && aligned16(x)) {  // (not relu's spelling: a mutant of relu's edits that line)
      EMBER_LAUNCH(blocks_for((n + 3) / 4), kThreads, 0, stream, activation_forward_float4_kernel<op>)(x, y, n, param);
      EMBER_CUDA_LAUNCH_CHECK(activation_name(op));
      return;
    }
  }
  EMBER_LAUNCH(blocks_for(n), kThreads, 0, stream, activation_forward_kernel<op, T>)(x, y, n, param);
  EMBER_CUDA_LAUNCH_CHECK(activation_name(op));
}

template <Activation op, class T>
void launch_backward(const T* dy, const T* s, T* dx, int64_t n, T param, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    if (aligned16(dy) && aligned16(s) && aligned16(dx)) {
      EMBER_LAUNCH(blocks_for((n + 3) / 4), kThreads, 0, stream, activation_backward_float4_kernel<op>)(dy, s, dx, n,
                                                                                                          param);
      EMBER_CUDA_LAUNCH_CHECK(activation_name(op));
      return;
    }
  }
  EMBER_LAUNCH(blocks_for(n), kThreads, 0, stream, activation_backward_kernel<op, T>)(dy, s, dx, n, param);
  EMBER_CUDA_LAUNCH_CHECK(activation_name(op));
}

}  // namespace

template <class T>
void activation_forward(Activation op, double param, const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const T p = static_cast<T>(param);
  switch (op) {
    case Activation::Sigmoid: return launch_forward<Activation::Sigmoid>(x, y, n, p, stream);
    case Activation::Tanh: return launch_forward<Activation::Tanh>(x, y, n, p, stream);
    case Activation::Gelu: return launch_forward<Activation::Gelu>(x, y, n, p, stream);
    case Activation::GeluTanh: return launch_forward<Activation::GeluTanh>(x, y, n, p, stream);
    case Activation::Silu: return launch_forward<Activation::Silu>(x, y, n, p, stream);
    case Activation::LeakyRelu: return launch_forward<Activation::LeakyRelu>(x, y, n, p, stream);
    case Activation::Elu: return launch_forward<Activation::Elu>(x, y, n, p, stream);
    case Activation::Hardswish: return launch_forward<Activation::Hardswish>(x, y, n, p, stream);
  }
  throw Error(ember::detail::str("activation_forward: unknown activation code ", static_cast<int>(op)));
}

template <class T>
void activation_backward(Activation op, double param, const T* dy, const T* saved, T* dx, int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return;
  const T p = static_cast<T>(param);
  switch (op) {
    case Activation::Sigmoid: return launch_backward<Activation::Sigmoid>(dy, saved, dx, n, p, stream);
    case Activation::Tanh: return launch_backward<Activation::Tanh>(dy, saved, dx, n, p, stream);
    case Activation::Gelu: return launch_backward<Activation::Gelu>(dy, saved, dx, n, p, stream);
    case Activation::GeluTanh: return launch_backward<Activation::GeluTanh>(dy, saved, dx, n, p, stream);
    case Activation::Silu: return launch_backward<Activation::Silu>(dy, saved, dx, n, p, stream);
    case Activation::LeakyRelu: return launch_backward<Activation::LeakyRelu>(dy, saved, dx, n, p, stream);
    case Activation::Elu: return launch_backward<Activation::Elu>(dy, saved, dx, n, p, stream);
    case Activation::Hardswish: return launch_backward<Activation::Hardswish>(dy, saved, dx, n, p, stream);
  }
  throw Error(ember::detail::str("activation_backward: unknown activation code ", static_cast<int>(op)));
}

template void activation_forward<float>(Activation, double, const float*, float*, int64_t, cudaStream_t);
template void activation_forward<double>(Activation, double, const double*, double*, int64_t, cudaStream_t);
template void activation_backward<float>(Activation, double, const float*, const float*, float*, int64_t,
                                         cudaStream_t);
template void activation_backward<double>(Activation, double, const double*, const double*, double*, int64_t,
                                          cudaStream_t);

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
