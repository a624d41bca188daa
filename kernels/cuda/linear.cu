// linear's bias helpers: a grid-stride copy of the bias row, and column sums with 32 columns per
// block and 8 interleaved partial sums per column, added in a fixed order.
#include "ember/kernels/cuda/linear.h"

#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

template <class T>
__global__ void broadcast_rows_kernel(const T* row, int64_t n, int64_t cols, T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = row[i % cols];
  }
}

// Block (32, 8): column blockIdx.x * 32 + threadIdx.x; lane threadIdx.y sums rows y, y + 8, ...;
// lane 0 then adds the 8 partial sums in order.
template <class T>
__global__ void column_sums_kernel(const T* x, int64_t rows, int64_t cols, T* out) {
  __shared__ T partial[8][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  T sum = 0;
  if (col < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += 8) sum += x[r * cols + col];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    T total = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) total += partial[i][threadIdx.x];
    out[col] = total;
  }
}

}  // namespace

template <class T>
void broadcast_rows(const T* row, int64_t rows, int64_t cols, T* out, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  EMBER_LAUNCH(detail::grid_for(n, 256, 65535), 256, 0, stream, broadcast_rows_kernel<T>)(row, n, cols, out);
  EMBER_CUDA_LAUNCH_CHECK("linear (bias)");
}

template <class T>
void column_sums(const T* x, int64_t rows, int64_t cols, T* out, cudaStream_t stream) {
  if (cols == 0) return;
  EMBER_LAUNCH(static_cast<unsigned>((cols + 31) / 32), dim3(32, 8), 0, stream, column_sums_kernel<T>)(
      x, rows, cols, out);
  EMBER_CUDA_LAUNCH_CHECK("linear (bias gradient)");
}

template void broadcast_rows<float>(const float*, int64_t, int64_t, float*, cudaStream_t);
template void broadcast_rows<double>(const double*, int64_t, int64_t, double*, cudaStream_t);
template void column_sums<float>(const float*, int64_t, int64_t, float*, cudaStream_t);
template void column_sums<double>(const double*, int64_t, int64_t, double*, cudaStream_t);

}  // namespace ember::kernels::cuda
