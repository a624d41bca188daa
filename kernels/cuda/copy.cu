// Strided copy with dtype cast, and fill, on one CUDA device.
#include "kernels/cuda/copy.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace ember::kernels::cuda {

namespace {

// Offset (in elements) of logical element `index` in `layout`.
__device__ int64_t offset_of(const StridedLayout& layout, int64_t index) {
  int64_t offset = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    int64_t size = layout.sizes[d];
    offset += (index % size) * layout.strides[d];
    index /= size;
  }
  return offset;
}

template <class D, class S>
__global__ void copy_kernel(D* dst, StridedLayout dst_layout, const S* src, StridedLayout src_layout, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[offset_of(dst_layout, i)] = static_cast<D>(src[offset_of(src_layout, i)]);
  }
}

template <class T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

void check_launch(const char* kernel) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error: launching ") + kernel + " failed: " + cudaGetErrorString(status));
  }
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 65535)); }

// Calls fn(T{}) with the C++ type of a dtype code (0 float32, 1 float64, 2 int64, 3 uint8, 4 bool).
template <class Fn>
void with_type(int code, Fn fn) {
  switch (code) {
    case 0: fn(float{}); break;
    case 1: fn(double{}); break;
    case 2: fn(int64_t{}); break;
    case 3:
    case 4: fn(uint8_t{}); break;
    default: throw std::runtime_error("copy_strided: unsupported dtype code " + std::to_string(code));
  }
}

}  // namespace

void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return;
  with_type(dst_dtype, [&](auto d) {
    using D = decltype(d);
    with_type(src_dtype, [&](auto s) {
      using S = decltype(s);
      copy_kernel<D, S><<<blocks_for(numel), 256, 0, stream>>>(static_cast<D*>(dst), dst_layout,
                                                               static_cast<const S*>(src), src_layout, numel);
    });
  });
  check_launch("copy_strided");
}

void fill(void* dst, int dtype, int64_t numel, double value, cudaStream_t stream) {
  if (numel == 0) return;
  with_type(dtype, [&](auto t) {
    using T = decltype(t);
    fill_kernel<T><<<blocks_for(numel), 256, 0, stream>>>(static_cast<T*>(dst), numel, static_cast<T>(value));
  });
  check_launch("fill");
}

}  // namespace ember::kernels::cuda
