// index_select: a grid-stride pass over the selection, moving elements by their size; its
// backward, index_add: one thread per destination column (o, k), walking the indices in order;
// gather: a grid-stride pass over the index, each element's coordinates decoded by division.
#include "ember/kernels/cuda/index.h"

#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned element_blocks(int64_t n) { return detail::grid_for(n, kThreads, 8192); }

// dst[o, i, k] = src[o, index[i], k]; U is an unsigned type of the element's size.
template <class U>
__global__ void index_select_kernel(const U* src, const int64_t* index, U* dst, int64_t count, int64_t dim_size,
                                    int64_t inner, int64_t total) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = e % inner, i = (e / inner) % count, o = e / (inner * count);
    dst[e] = src[(o * dim_size + index[i]) * inner + k];
  }
}

template <class T>
__global__ void index_add_kernel(const T* src, const int64_t* index, T* dst, int64_t skip_index, int64_t count,
                                 int64_t dim_size, int64_t inner, int64_t columns) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < columns;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, k = c % inner;
    for (int64_t i = 0; i < count; ++i) {
      if (index[i] == skip_index) continue;
      dst[(o * dim_size + index[i]) * inner + k] += src[(o * count + i) * inner + k];
    }
  }
}

template <class U>
__global__ void gather_kernel(const U* src, const int64_t* index, U* dst, GatherShape s) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < s.numel;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t offset = index[e] * s.input_strides[s.dim];
    for (int64_t d = s.ndim - 1, rest = e; d >= 0; --d) {
      if (d != s.dim) offset += (rest % s.index_sizes[d]) * s.input_strides[d];
      rest /= s.index_sizes[d];
    }
    dst[e] = src[offset];
  }
}

template <class U>
void launch_gather(const void* src, const int64_t* index, void* dst, const GatherShape& s, cudaStream_t stream) {
  EMBER_LAUNCH(element_blocks(s.numel), kThreads, 0, stream, gather_kernel<U>)(
      static_cast<const U*>(src), index, static_cast<U*>(dst), s);
  EMBER_CUDA_LAUNCH_CHECK("gather");
}

template <class U>
void launch_select(const void* src, const int64_t* index, void* dst, const IndexShape& s, cudaStream_t stream) {
  EMBER_LAUNCH(element_blocks(s.selected_numel()), kThreads, 0, stream, index_select_kernel<U>)(
      static_cast<const U*>(src), index, static_cast<U*>(dst), s.count, s.dim_size, s.inner, s.selected_numel());
  EMBER_CUDA_LAUNCH_CHECK("index_select");
}

}  // namespace

void index_select(const void* src, const int64_t* index, void* dst, size_t element_size, const IndexShape& s,
                  cudaStream_t stream) {
  if (s.selected_numel() <= 0) return;
  switch (element_size) {
    case 1: return launch_select<uint8_t>(src, index, dst, s, stream);
    case 2: return launch_select<uint16_t>(src, index, dst, s, stream);
    case 4: return launch_select<uint32_t>(src, index, dst, s, stream);
    default: return launch_select<uint64_t>(src, index, dst, s, stream);
  }
}

void gather(const void* src, const int64_t* index, void* dst, size_t element_size, const GatherShape& s,
            cudaStream_t stream) {
  if (s.numel <= 0) return;
  switch (element_size) {
    case 1: return launch_gather<uint8_t>(src, index, dst, s, stream);
    case 2: return launch_gather<uint16_t>(src, index, dst, s, stream);
    case 4: return launch_gather<uint32_t>(src, index, dst, s, stream);
    default: return launch_gather<uint64_t>(src, index, dst, s, stream);
  }
}

template <class T>
void index_add(const T* src, const int64_t* index, T* dst, int64_t skip_index, const IndexShape& s,
               cudaStream_t stream) {
  const int64_t columns = s.outer * s.inner;
  if (columns <= 0 || s.count <= 0) return;
  EMBER_LAUNCH(element_blocks(columns), kThreads, 0, stream, index_add_kernel<T>)(
      src, index, dst, skip_index, s.count, s.dim_size, s.inner, columns);
  EMBER_CUDA_LAUNCH_CHECK("index_add");
}

template void index_add<float>(const float*, const int64_t*, float*, int64_t, const IndexShape&, cudaStream_t);
template void index_add<double>(const double*, const int64_t*, double*, int64_t, const IndexShape&, cudaStream_t);

}  // namespace ember::kernels::cuda
