// Batch normalisation: one block per channel for the statistics (two passes, double sums, a
// shuffle + shared-memory block reduction) and for the backward's sums and dx; grid-stride
// element-wise passes for the forwards' normalisation.
#include "ember/kernels/cuda/batch_norm.h"

#include <algorithm>
#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;  // every kernel here; a multiple of the warp size

// Blocks for a block-per-channel launch (the kernels loop over channels past the cap), and for a
// grid-stride element-wise pass.
unsigned channel_blocks(int64_t channels) { return detail::grid_for(channels, 1, 65535); }
unsigned element_blocks(int64_t n) { return detail::grid_for(n, kThreads, 8192); }

__device__ __forceinline__ double warp_sum(double v) {
  for (int delta = kWarpSize / 2; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
  return v;
}

// The sum over the block, returned to every thread. All threads of the block must call it (it
// synchronises); `shared` holds kWarpSize values. The first barrier makes back-to-back calls
// safe: every thread has read the previous result before any warp overwrites it.
__device__ double block_sum(double v, double* shared) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    double partial = lane < warps ? shared[lane] : 0.0;
    partial = warp_sum(partial);
    if (lane == 0) shared[0] = partial;
  }
  __syncthreads();
  return shared[0];
}

// The i-th of channel c's n = N * S values, i = b * S + s, in [N, C, S].
__device__ __forceinline__ int64_t channel_index(int64_t i, int64_t c, int64_t C, int64_t S) {
  return ((i / S) * C + c) * S + i % S;
}

__device__ __forceinline__ float inverse_sqrt(float v) { return 1.0f / sqrtf(v); }
__device__ __forceinline__ double inverse_sqrt(double v) { return 1.0 / sqrt(v); }

// Per channel: mean and biased variance (two passes), save_mean / save_invstd, and the running
// statistics' update (unbiased variance) by thread 0. Channel loops are uniform per block.
template <class T>
__global__ void batch_norm_stats_kernel(const T* x, T* save_mean, T* save_invstd, T* running_mean,
                                        T* running_var, double momentum, double eps, int64_t C, int64_t S,
                                        int64_t n) {
  __shared__ double shared[kWarpSize];
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(x[channel_index(i, c, C, S)]);
    const double mean = block_sum(sum, shared) / static_cast<double>(n);
    double squares = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double d = static_cast<double>(x[channel_index(i, c, C, S)]) - mean;
      squares += d * d;
    }
    squares = block_sum(squares, shared);
    if (threadIdx.x == 0) {
      const double var = squares / static_cast<double>(n);
      save_mean[c] = static_cast<T>(mean);
      save_invstd[c] = static_cast<T>(1.0 / sqrt(var + eps));
      if (running_mean != nullptr) {
        const double unbiased = squares / static_cast<double>(n - 1);
        running_mean[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_mean[c]) + momentum * mean);
        running_var[c] = static_cast<T>((1.0 - momentum) * static_cast<double>(running_var[c]) + momentum * unbiased);
      }
    }
  }
}

// y = (x - mean[c]) * invstd[c] * weight[c] + bias[c], written x * scale + shift as on the CPU.
template <class T>
__global__ void batch_norm_normalize_kernel(const T* x, const T* mean, const T* invstd, const T* weight,
                                            const T* bias, T* y, int64_t C, int64_t S, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const T scale = invstd[c] * (weight != nullptr ? weight[c] : T(1));
    const T shift = (bias != nullptr ? bias[c] : T(0)) - mean[c] * scale;
    y[i] = x[i] * scale + shift;
  }
}

// The evaluation forward: the same, with invstd from the given variance; block 0 also stores
// invstd per channel when asked.
template <class T>
__global__ void batch_norm_eval_kernel(const T* x, const T* mean, const T* var, const T* weight, const T* bias,
                                       T* y, T* save_invstd, T eps, int64_t C, int64_t S, int64_t total) {
  if (save_invstd != nullptr && blockIdx.x == 0) {
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) save_invstd[c] = inverse_sqrt(var[c] + eps);
  }
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / S) % C;
    const T scale = inverse_sqrt(var[c] + eps) * (weight != nullptr ? weight[c] : T(1));
    const T shift = (bias != nullptr ? bias[c] : T(0)) - mean[c] * scale;
    y[i] = x[i] * scale + shift;
  }
}

// Per channel: sum dy and sum dy * (x - mean) (block sums), dweight and dbias by thread 0, then
// dx over the channel's values (see kernels/cpu/batch_norm.h for the formulas).
template <class T>
__global__ void batch_norm_backward_kernel(const T* dy, const T* x, const T* mean, const T* invstd,
                                           const T* weight, T* dx, T* dweight, T* dbias, bool training,
                                           int64_t C, int64_t S, int64_t n) {
  __shared__ double shared[kWarpSize];
  const bool need_sums = training || dweight != nullptr || dbias != nullptr;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const double m = static_cast<double>(mean[c]), istd = static_cast<double>(invstd[c]);
    double sum_dy = 0, sum_dy_xmu = 0;
    if (need_sums) {  // uniform over the grid: every thread reaches the barriers or none does
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const int64_t at = channel_index(i, c, C, S);
        const double g = static_cast<double>(dy[at]);
        sum_dy += g;
        sum_dy_xmu += g * (static_cast<double>(x[at]) - m);
      }
      sum_dy = block_sum(sum_dy, shared);
      sum_dy_xmu = block_sum(sum_dy_xmu, shared);
    }
    if (threadIdx.x == 0) {
      if (dweight != nullptr) dweight[c] = static_cast<T>(sum_dy_xmu * istd);
      if (dbias != nullptr) dbias[c] = static_cast<T>(sum_dy);
    }
    if (dx == nullptr) continue;
    const T k = static_cast<T>(istd * (weight != nullptr ? static_cast<double>(weight[c]) : 1.0));
    if (training) {
      const T mean_t = static_cast<T>(m);
      const T mean_dy = static_cast<T>(sum_dy / static_cast<double>(n));
      const T proj = static_cast<T>(sum_dy_xmu * istd * istd / static_cast<double>(n));
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const int64_t at = channel_index(i, c, C, S);
        dx[at] = (dy[at] - mean_dy - (x[at] - mean_t) * proj) * k;
      }
    } else {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const int64_t at = channel_index(i, c, C, S);
        dx[at] = dy[at] * k;
      }
    }
  }
}

}  // namespace

template <class T>
void batch_norm_forward_training(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd,
                                 T* running_mean, T* running_var, double momentum, double eps,
                                 const BatchNormShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  EMBER_LAUNCH(channel_blocks(s.channels), kThreads, 0, stream, batch_norm_stats_kernel<T>)(
      x, save_mean, save_invstd, running_mean, running_var, momentum, eps, s.channels, s.spatial, s.per_channel());
  EMBER_CUDA_LAUNCH_CHECK("batch_norm_forward_training");
  EMBER_LAUNCH(element_blocks(s.numel()), kThreads, 0, stream, batch_norm_normalize_kernel<T>)(
      x, save_mean, save_invstd, weight, bias, y, s.channels, s.spatial, s.numel());
  EMBER_CUDA_LAUNCH_CHECK("batch_norm_forward_training");
}

template <class T>
void batch_norm_forward_eval(const T* x, const T* mean, const T* var, const T* weight, const T* bias, T* y,
                             T* save_invstd, double eps, const BatchNormShape& s, cudaStream_t stream) {
  if (s.channels <= 0) return;
  EMBER_LAUNCH(element_blocks(s.numel()), kThreads, 0, stream, batch_norm_eval_kernel<T>)(
      x, mean, var, weight, bias, y, save_invstd, static_cast<T>(eps), s.channels, s.spatial, s.numel());
  EMBER_CUDA_LAUNCH_CHECK("batch_norm_forward_eval");
}

template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx,
                         T* dweight, T* dbias, bool training, const BatchNormShape& s, cudaStream_t stream) {
  if (s.channels <= 0) return;
  EMBER_LAUNCH(channel_blocks(s.channels), kThreads, 0, stream, batch_norm_backward_kernel<T>)(
      dy, x, mean, invstd, weight, dx, dweight, dbias, training, s.channels, s.spatial, s.per_channel());
  EMBER_CUDA_LAUNCH_CHECK("batch_norm_backward");
}

#define EMBER_INSTANTIATE(T)                                                                                    \
  template void batch_norm_forward_training<T>(const T*, const T*, const T*, T*, T*, T*, T*, T*, double, double, \
                                               const BatchNormShape&, cudaStream_t);                           \
  template void batch_norm_forward_eval<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, double,      \
                                           const BatchNormShape&, cudaStream_t);                               \
  template void batch_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, bool,       \
                                       const BatchNormShape&, cudaStream_t);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cuda
