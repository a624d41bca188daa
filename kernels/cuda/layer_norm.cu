// Layer normalisation: one warp per row for the statistics, the normalisation and dx (shuffle
// sums in double, no shared memory, no barriers); one thread per column for the parameter
// gradients, summed over the rows in order in double (the CPU sums blocks of 64 rows, then the
// blocks: the two agree to rounding).
#include "ember/kernels/cuda/layer_norm.h"

#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;  // every kernel here; a multiple of the warp size
constexpr int kWarpsPerBlock = kThreads / kWarpSize;

unsigned row_blocks(int64_t rows) { return detail::grid_for(rows, kWarpsPerBlock, 65535); }
unsigned column_blocks(int64_t cols) { return detail::grid_for(cols, kThreads, 8192); }

// The sum over the warp's 32 lanes, returned to every lane.
__device__ __forceinline__ double warp_sum(double v) {
  for (int delta = kWarpSize / 2; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
  return v;
}

// The rows of this warp: every lane of a warp takes the same rows, so the shuffles see all 32.
#define EMBER_FOR_EACH_WARP_ROW(r, rows)                                                        \
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize; \
       r < (rows); r += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock)

template <class T>
__global__ void layer_norm_forward_kernel(const T* x, const T* weight, const T* bias, T* y, T* save_mean,
                                          T* save_invstd, double eps, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  EMBER_FOR_EACH_WARP_ROW(r, rows) {
    const T* xr = x + r * cols;
    double sum = 0;
    for (int64_t j = lane; j < cols; j += kWarpSize) sum += static_cast<double>(xr[j]);
    const double mean = warp_sum(sum) / static_cast<double>(cols);
    double squares = 0;
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      const double d = static_cast<double>(xr[j]) - mean;
      squares += d * d;
    }
    const double invstd = 1.0 / sqrt(warp_sum(squares) / static_cast<double>(cols) + eps);
    if (lane == 0) {
      save_mean[r] = static_cast<T>(mean);
      save_invstd[r] = static_cast<T>(invstd);
    }
    // (x - mean) * invstd, as on the CPU (kernels/cpu/layer_norm.cpp says why).
    const T mean_t = static_cast<T>(mean), invstd_t = static_cast<T>(invstd);
    T* yr = y + r * cols;
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      const T v = (xr[j] - mean_t) * invstd_t;
      yr[j] = weight != nullptr ? v * weight[j] + bias[j] : v;
    }
  }
}

// dx per row (see kernels/cpu/layer_norm.h for the formula).
template <class T>
__global__ void layer_norm_dx_kernel(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight,
                                     T* dx, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  EMBER_FOR_EACH_WARP_ROW(r, rows) {
    const T *dyr = dy + r * cols, *xr = x + r * cols;
    const double m = static_cast<double>(mean[r]), istd = static_cast<double>(invstd[r]);
    double sum_g = 0, sum_g_xhat = 0;
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      const double g = static_cast<double>(dyr[j]) * (weight != nullptr ? static_cast<double>(weight[j]) : 1.0);
      sum_g += g;
      sum_g_xhat += g * ((static_cast<double>(xr[j]) - m) * istd);
    }
    const double n = static_cast<double>(cols);
    const T mean_g = static_cast<T>(warp_sum(sum_g) / n), proj = static_cast<T>(istd * warp_sum(sum_g_xhat) / n);
    const T mean_t = static_cast<T>(m), istd_t = static_cast<T>(istd);
    T* dxr = dx + r * cols;
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      const T g = weight != nullptr ? dyr[j] * weight[j] : dyr[j];
      dxr[j] = (g - mean_g - (xr[j] - mean_t) * proj) * istd_t;
    }
  }
}

// dweight[j] = sum_r dy * xhat and dbias[j] = sum_r dy, one thread per column.
template <class T>
__global__ void layer_norm_parameters_kernel(const T* dy, const T* x, const T* mean, const T* invstd, T* dweight,
                                             T* dbias, int64_t rows, int64_t cols) {
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < cols;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double dw = 0, db = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double g = static_cast<double>(dy[r * cols + j]);
      dw += g * ((static_cast<double>(x[r * cols + j]) - static_cast<double>(mean[r])) *
                 static_cast<double>(invstd[r]));
      db += g;
    }
    if (dweight != nullptr) dweight[j] = static_cast<T>(dw);
    if (dbias != nullptr) dbias[j] = static_cast<T>(db);
  }
}

#undef EMBER_FOR_EACH_WARP_ROW

}  // namespace

template <class T>
void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd, double eps,
                        const LayerNormShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  EMBER_LAUNCH(row_blocks(s.rows), kThreads, 0, stream, layer_norm_forward_kernel<T>)(
      x, weight, bias, y, save_mean, save_invstd, eps, s.rows, s.cols);
  EMBER_CUDA_LAUNCH_CHECK("layer_norm_forward");
}

template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx, T* dweight,
                         T* dbias, const LayerNormShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  if (dx != nullptr) {
    EMBER_LAUNCH(row_blocks(s.rows), kThreads, 0, stream, layer_norm_dx_kernel<T>)(
        dy, x, mean, invstd, weight, dx, s.rows, s.cols);
    EMBER_CUDA_LAUNCH_CHECK("layer_norm_backward");
  }
  if (dweight != nullptr || dbias != nullptr) {
    EMBER_LAUNCH(column_blocks(s.cols), kThreads, 0, stream, layer_norm_parameters_kernel<T>)(
        dy, x, mean, invstd, dweight, dbias, s.rows, s.cols);
    EMBER_CUDA_LAUNCH_CHECK("layer_norm_backward");
  }
}

#define EMBER_INSTANTIATE(T)                                                                              \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, double, const LayerNormShape&, \
                                      cudaStream_t);                                                     \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,     \
                                       const LayerNormShape&, cudaStream_t);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cuda
