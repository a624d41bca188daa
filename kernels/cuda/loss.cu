// Losses. Row ops (log_softmax and its backward, the fused cross-entropy forward) give each row a
// warp (up to kWarpRowLimit columns) or a block, reduce with shuffles (and shared memory across
// warps), and subtract the row max before exponentiating. Element-wise parts (the nll and
// cross-entropy backwards, mse) take one thread per element. mse's sum to one number takes one block.
#include "ember/kernels/cuda/loss.h"

#include <algorithm>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;              // every kernel here; a multiple of the warp size
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr int64_t kWarpRowLimit = 1024;    // longer rows get a block each
constexpr int kReduceThreads = 1024;       // the one block of a reduced mse_loss_forward

unsigned grid_for(int64_t work, int64_t per_block) { return detail::grid_for(work, per_block, 65535); }

__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }
__device__ __forceinline__ float log_of(float v) { return logf(v); }
__device__ __forceinline__ double log_of(double v) { return log(v); }

using detail::negative_infinity;
using detail::quiet_nan;

struct MaxOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return b > a ? b : a; }
};
struct SumOp {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

// After the butterfly every lane holds the reduction of the 32 lanes' values.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  for (int delta = kWarpSize / 2; delta > 0; delta >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, delta));
  return v;
}

// The reduction over the whole block, returned to every thread. All threads of the block must
// call it (it synchronises); `shared` holds kWarpSize values. The first barrier makes reuse of
// `shared` by back-to-back calls safe: every thread has read the previous result before any
// warp overwrites it.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity, T* shared) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_reduce(v, op);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T partial = lane < warps ? shared[lane] : identity;  // only warp 0 reads the partials
    partial = warp_reduce(partial, op);
    if (lane == 0) shared[0] = partial;  // after the shuffles: every lane of warp 0 has read
  }
  __syncthreads();
  return shared[0];
}

// Which rows a thread works on and which of the row's columns. kWarpPerRow: a warp per row;
// otherwise the whole block per row. Row loops are uniform per warp (per block), as the
// reductions need.
template <bool kWarpPerRow>
struct RowTeam {
  int64_t first_row, row_step;
  int lane, width;
  __device__ RowTeam() {
    if constexpr (kWarpPerRow) {
      first_row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
      row_step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
      lane = threadIdx.x % kWarpSize;
      width = kWarpSize;
    } else {
      first_row = blockIdx.x;
      row_step = gridDim.x;
      lane = threadIdx.x;
      width = blockDim.x;
    }
  }
  template <class T, class Op>
  __device__ T reduce(T v, Op op, T identity, T* shared) const {
    if constexpr (kWarpPerRow) {
      return warp_reduce(v, op);
    } else {
      return block_reduce(v, op, identity, shared);
    }
  }
};

// log_softmax of each row; with `target` (cross-entropy), also loss_rows[row] = -logp[row, t].
template <class T, bool kWarpPerRow>
__global__ void log_softmax_rows_kernel(const T* x, T* y, const int64_t* target, T* loss_rows, int64_t rows,
                                        int64_t cols) {
  __shared__ T shared[kWarpSize];
  const RowTeam<kWarpPerRow> team;
  for (int64_t row = team.first_row; row < rows; row += team.row_step) {
    const T* in = x + row * cols;
    T* out = y + row * cols;
    T m = negative_infinity<T>();
    for (int64_t j = team.lane; j < cols; j += team.width) m = MaxOp{}(m, in[j]);
    m = team.reduce(m, MaxOp{}, negative_infinity<T>(), shared);
    T s = T(0);
    for (int64_t j = team.lane; j < cols; j += team.width) s += exp_of(in[j] - m);
    s = team.reduce(s, SumOp{}, T(0), shared);
    const T shift = m + log_of(s);
    if (target != nullptr && team.lane == 0) {
      const int64_t t = target[row];
      loss_rows[row] = (t >= 0 && t < cols) ? -(in[t] - shift) : quiet_nan<T>();
    }
    // Each element is read and written by the same thread, after the reductions: y may alias x.
    for (int64_t j = team.lane; j < cols; j += team.width) out[j] = in[j] - shift;
  }
}

template <class T, bool kWarpPerRow>
__global__ void log_softmax_backward_kernel(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols) {
  __shared__ T shared[kWarpSize];
  const RowTeam<kWarpPerRow> team;
  for (int64_t row = team.first_row; row < rows; row += team.row_step) {
    const T* g = dy + row * cols;
    const T* out = y + row * cols;
    T* d = dx + row * cols;
    T s = T(0);
    for (int64_t j = team.lane; j < cols; j += team.width) s += g[j];
    s = team.reduce(s, SumOp{}, T(0), shared);
    for (int64_t j = team.lane; j < cols; j += team.width) d[j] = g[j] - exp_of(out[j]) * s;
  }
}

template <class T>
void launch_log_softmax_rows(const T* x, T* y, const int64_t* target, T* loss_rows, int64_t rows, int64_t cols,
                             cudaStream_t stream, const char* op) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= kWarpRowLimit) {
    EMBER_LAUNCH(grid_for(rows, kWarpsPerBlock), kThreads, 0, stream, log_softmax_rows_kernel<T, true>)(
        x, y, target, loss_rows, rows, cols);
  } else {
    EMBER_LAUNCH(grid_for(rows, 1), kThreads, 0, stream, log_softmax_rows_kernel<T, false>)(
        x, y, target, loss_rows, rows, cols);
  }
  EMBER_CUDA_LAUNCH_CHECK(op);
}

template <class T>
__global__ void nll_loss_forward_kernel(const T* logp, const int64_t* target, T* loss_rows, int64_t rows,
                                        int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = target[i];
    loss_rows[i] = (t >= 0 && t < cols) ? -logp[i * cols + t] : quiet_nan<T>();
  }
}

template <class T>
__global__ void nll_loss_backward_kernel(const T* grad_rows, const int64_t* target, T* dlogp, int64_t rows,
                                         int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / cols, j = k - i * cols;
    const int64_t t = target[i];
    dlogp[k] = (t >= 0 && t < cols) ? (j == t ? -grad_rows[i] : T(0)) : quiet_nan<T>();
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* log_probs, const int64_t* target, const T* grad_rows,
                                              T* dlogits, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = k / cols, j = k - i * cols;
    const int64_t t = target[i];
    const T p = exp_of(log_probs[k]), g = grad_rows[i];
    dlogits[k] = (t >= 0 && t < cols) ? (j == t ? (p - T(1)) * g : p * g) : quiet_nan<T>();
  }
}

// out[0] = scale * sum of (x[i] - t[i])^2. Launched with one block; accumulates in double.
template <class T>
__global__ void squared_error_sum_kernel(const T* x, const T* t, T* out, int64_t n, double scale) {
  __shared__ double shared[kWarpSize];
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const T d = x[i] - t[i];
    s += static_cast<double>(d * d);
  }
  s = block_reduce(s, SumOp{}, 0.0, shared);
  if (threadIdx.x == 0) out[0] = static_cast<T>(scale * s);
}

template <class T>
__global__ void squared_error_kernel(const T* x, const T* t, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T d = x[i] - t[i];
    out[i] = d * d;
  }
}

template <class T>
__global__ void mse_loss_backward_kernel(const T* x, const T* t, const T* grad, bool grad_is_scalar, T scale, T* dx,
                                         T* dt, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const T g = grad_is_scalar ? scale * grad[0] : grad[i];
    const T d = T(2) * (x[i] - t[i]) * g;
    dx[i] = d;
    if (dt != nullptr) dt[i] = -d;
  }
}

}  // namespace

template <class T>
void log_softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  launch_log_softmax_rows<T>(x, y, nullptr, nullptr, rows, cols, stream, "log_softmax_forward");
}

template <class T>
void log_softmax_backward(const T* dy, const T* y, T* dx, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  if (cols <= kWarpRowLimit) {
    EMBER_LAUNCH(grid_for(rows, kWarpsPerBlock), kThreads, 0, stream, log_softmax_backward_kernel<T, true>)(
        dy, y, dx, rows, cols);
  } else {
    EMBER_LAUNCH(grid_for(rows, 1), kThreads, 0, stream, log_softmax_backward_kernel<T, false>)(
        dy, y, dx, rows, cols);
  }
  EMBER_CUDA_LAUNCH_CHECK("log_softmax_backward");
}

template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, T* loss_rows, int64_t rows, int64_t cols,
                      cudaStream_t stream) {
  if (rows <= 0) return;
  EMBER_LAUNCH(grid_for(rows, kThreads), kThreads, 0, stream, nll_loss_forward_kernel<T>)(
      logp, target, loss_rows, rows, cols);
  EMBER_CUDA_LAUNCH_CHECK("nll_loss_forward");
}

template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, T* dlogp, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  EMBER_LAUNCH(grid_for(rows * cols, kThreads), kThreads, 0, stream, nll_loss_backward_kernel<T>)(
      grad_rows, target, dlogp, rows, cols);
  EMBER_CUDA_LAUNCH_CHECK("nll_loss_backward");
}

template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* log_probs_out, T* loss_rows, int64_t rows,
                           int64_t cols, cudaStream_t stream) {
  launch_log_softmax_rows<T>(logits, log_probs_out, target, loss_rows, rows, cols, stream, "cross_entropy_forward");
}

template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* grad_rows, T* dlogits,
                            int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  EMBER_LAUNCH(grid_for(rows * cols, kThreads), kThreads, 0, stream, cross_entropy_backward_kernel<T>)(
      log_probs, target, grad_rows, dlogits, rows, cols);
  EMBER_CUDA_LAUNCH_CHECK("cross_entropy_backward");
}

template <class T>
void mse_loss_forward(const T* x, const T* t, T* out, int64_t n, bool reduce, double scale, cudaStream_t stream) {
  if (reduce) {
    // n == 0 still writes out[0] (a sum of nothing is 0).
    EMBER_LAUNCH(1, kReduceThreads, 0, stream, squared_error_sum_kernel<T>)(x, t, out, n, scale);
  } else {
    if (n <= 0) return;
    EMBER_LAUNCH(grid_for(n, kThreads), kThreads, 0, stream, squared_error_kernel<T>)(x, t, out, n);
  }
  EMBER_CUDA_LAUNCH_CHECK("mse_loss_forward");
}

template <class T>
void mse_loss_backward(const T* x, const T* t, const T* grad, bool grad_is_scalar, double scale, T* dx, T* dt,
                       int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  EMBER_LAUNCH(grid_for(n, kThreads), kThreads, 0, stream, mse_loss_backward_kernel<T>)(
      x, t, grad, grad_is_scalar, static_cast<T>(scale), dx, dt, n);
  EMBER_CUDA_LAUNCH_CHECK("mse_loss_backward");
}

#define EMBER_INSTANTIATE_CUDA_LOSS(T)                                                                        \
  template void log_softmax_forward<T>(const T*, T*, int64_t, int64_t, cudaStream_t);                        \
  template void log_softmax_backward<T>(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);             \
  template void nll_loss_forward<T>(const T*, const int64_t*, T*, int64_t, int64_t, cudaStream_t);           \
  template void nll_loss_backward<T>(const T*, const int64_t*, T*, int64_t, int64_t, cudaStream_t);          \
  template void cross_entropy_forward<T>(const T*, const int64_t*, T*, T*, int64_t, int64_t, cudaStream_t);  \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, T*, int64_t, int64_t,          \
                                          cudaStream_t);                                                     \
  template void mse_loss_forward<T>(const T*, const T*, T*, int64_t, bool, double, cudaStream_t);            \
  template void mse_loss_backward<T>(const T*, const T*, const T*, bool, double, T*, T*, int64_t,            \
                                     cudaStream_t);
EMBER_INSTANTIATE_CUDA_LOSS(float)
EMBER_INSTANTIATE_CUDA_LOSS(double)
#undef EMBER_INSTANTIATE_CUDA_LOSS

}  // namespace ember::kernels::cuda
