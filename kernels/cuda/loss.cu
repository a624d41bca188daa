// Softmax and losses. Row ops (softmax and its backward, the fused cross-entropy forward) give
// each contiguous row a warp (up to kWarpRowLimit elements) or a block, reducing with shuffles
// (and shared memory across warps), and each strided row (inner > 1) a thread; all subtract the
// row max before exponentiating. Element-wise parts (the nll and cross-entropy backwards, mse)
// take one thread per element. mse's sum to one number takes one block.
#include "ember/kernels/cuda/loss.h"

#include <algorithm>
#include <type_traits>

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

// Who works on a row. kWarp: a warp per row; kBlock: the whole block per row; kThread: a thread
// per row (the strided rows of inner > 1, whose neighbouring threads then read neighbouring
// addresses). Row loops are uniform per warp (per block), as the reductions need.
enum class Team { kWarp, kBlock, kThread };

template <Team kTeam>
struct RowTeam {
  int64_t first_row, row_step;
  int lane, width;
  __device__ RowTeam() {
    if constexpr (kTeam == Team::kWarp) {
      first_row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
      row_step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
      lane = threadIdx.x % kWarpSize;
      width = kWarpSize;
    } else if constexpr (kTeam == Team::kBlock) {
      first_row = blockIdx.x;
      row_step = gridDim.x;
      lane = threadIdx.x;
      width = blockDim.x;
    } else {
      first_row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
      row_step = static_cast<int64_t>(gridDim.x) * blockDim.x;
      lane = 0;
      width = 1;
    }
  }
  template <class T, class Op>
  __device__ T reduce(T v, Op op, T identity, T* shared) const {
    if constexpr (kTeam == Team::kWarp) {
      return warp_reduce(v, op);
    } else if constexpr (kTeam == Team::kBlock) {
      return block_reduce(v, op, identity, shared);
    } else {
      return v;
    }
  }
};

// Row r of [outer, size, inner] starts at (r / inner) * size * inner + r % inner; its elements are
// inner apart.
__device__ __forceinline__ int64_t row_base(int64_t r, int64_t size, int64_t inner) {
  return inner == 1 ? r * size : (r / inner) * size * inner + r % inner;
}

// The max and the sum of exp(x - max) of one row, on every lane of the team.
template <class T, Team kTeam>
__device__ void row_max_and_sum(const RowTeam<kTeam>& team, const T* in, int64_t n, int64_t stride, T* shared,
                                T& m, T& s) {
  m = negative_infinity<T>();
  for (int64_t j = team.lane; j < n; j += team.width) m = MaxOp{}(m, in[j * stride]);
  m = team.reduce(m, MaxOp{}, negative_infinity<T>(), shared);
  s = T(0);
  for (int64_t j = team.lane; j < n; j += team.width) s += exp_of(in[j * stride] - m);
  s = team.reduce(s, SumOp{}, T(0), shared);
}

template <class T, Team kTeam>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t n, int64_t inner, bool log) {
  __shared__ T shared[kWarpSize];
  const RowTeam<kTeam> team;
  for (int64_t row = team.first_row; row < rows; row += team.row_step) {
    const int64_t base = row_base(row, n, inner);
    const T* in = x + base;
    T* out = y + base;
    T m, s;
    row_max_and_sum(team, in, n, inner, shared, m, s);
    // Each element is read and written by the same thread, after the reductions: y may alias x.
    if (log) {
      const T shift = m + log_of(s);
      for (int64_t j = team.lane; j < n; j += team.width) out[j * inner] = in[j * inner] - shift;
    } else {
      const T scale = T(1) / s;
      for (int64_t j = team.lane; j < n; j += team.width) out[j * inner] = exp_of(in[j * inner] - m) * scale;
    }
  }
}

template <class T, Team kTeam>
__global__ void softmax_backward_kernel(const T* dy, const T* y, T* dx, int64_t rows, int64_t n, int64_t inner,
                                        bool log) {
  __shared__ T shared[kWarpSize];
  const RowTeam<kTeam> team;
  for (int64_t row = team.first_row; row < rows; row += team.row_step) {
    const int64_t base = row_base(row, n, inner);
    const T* g = dy + base;
    const T* out = y + base;
    T* d = dx + base;
    T s = T(0);
    for (int64_t j = team.lane; j < n; j += team.width) s += log ? g[j * inner] : g[j * inner] * out[j * inner];
    s = team.reduce(s, SumOp{}, T(0), shared);
    for (int64_t j = team.lane; j < n; j += team.width) {
      const int64_t k = j * inner;
      d[k] = log ? g[k] - exp_of(out[k]) * s : out[k] * (g[k] - s);
    }
  }
}

// The fused cross-entropy forward: log_softmax of the row, then its loss and weight.
template <class T, Team kTeam>
__global__ void cross_entropy_kernel(const T* x, const int64_t* target, const T* weight, T* y, T* loss_rows,
                                     T* row_weight, int64_t rows, int64_t n, int64_t inner, int64_t ignore_index,
                                     T smoothing) {
  __shared__ T shared[kWarpSize];
  const RowTeam<kTeam> team;
  for (int64_t row = team.first_row; row < rows; row += team.row_step) {
    const int64_t base = row_base(row, n, inner);
    const T* in = x + base;
    T* out = y + base;
    T m, s;
    row_max_and_sum(team, in, n, inner, shared, m, s);
    const T shift = m + log_of(s);
    // The smoothing term sum_c w[c] * logp[c], reduced by the whole team (uniform branch).
    T smooth = T(0);
    if (smoothing != T(0)) {
      for (int64_t j = team.lane; j < n; j += team.width) {
        smooth += (weight != nullptr ? weight[j] : T(1)) * (in[j * inner] - shift);
      }
      smooth = team.reduce(smooth, SumOp{}, T(0), shared);
    }
    if (team.lane == 0) {
      const int64_t t = target[row];
      if (t == ignore_index) {
        loss_rows[row] = T(0);
        row_weight[row] = T(0);
      } else if (t >= 0 && t < n) {
        const T wt = weight != nullptr ? weight[t] : T(1);
        loss_rows[row] = -(T(1) - smoothing) * wt * (in[t * inner] - shift) - smoothing / static_cast<T>(n) * smooth;
        row_weight[row] = wt;
      } else {
        loss_rows[row] = quiet_nan<T>();
        row_weight[row] = quiet_nan<T>();
      }
    }
    for (int64_t j = team.lane; j < n; j += team.width) out[j * inner] = in[j * inner] - shift;
  }
}

// Team choice for rows of n elements, inner apart; calls launch(team constant, grid).
template <class Launch>
void with_team(int64_t rows, int64_t n, int64_t inner, const Launch& launch) {
  if (inner != 1) {
    launch(std::integral_constant<Team, Team::kThread>{}, grid_for(rows, kThreads));
  } else if (n <= kWarpRowLimit) {
    launch(std::integral_constant<Team, Team::kWarp>{}, grid_for(rows, kWarpsPerBlock));
  } else {
    launch(std::integral_constant<Team, Team::kBlock>{}, grid_for(rows, 1));
  }
}

// The row r and class c of element k of [outer, classes, inner].
struct ElementOf {
  int64_t row, c;
  __device__ ElementOf(int64_t k, int64_t classes, int64_t inner) {
    const int64_t o = k / (classes * inner), rest = k - o * classes * inner;
    c = rest / inner;
    row = o * inner + (rest - c * inner);
  }
};

template <class T>
__global__ void nll_loss_forward_kernel(const T* logp, const int64_t* target, const T* weight, T* loss_rows,
                                        T* row_weight, int64_t rows, int64_t classes, int64_t inner,
                                        int64_t ignore_index) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = target[r];
    if (t == ignore_index) {
      loss_rows[r] = T(0);
      row_weight[r] = T(0);
    } else if (t >= 0 && t < classes) {
      const T wt = weight != nullptr ? weight[t] : T(1);
      loss_rows[r] = -wt * logp[row_base(r, classes, inner) + t * inner];
      row_weight[r] = wt;
    } else {
      loss_rows[r] = quiet_nan<T>();
      row_weight[r] = quiet_nan<T>();
    }
  }
}

template <class T>
__global__ void nll_loss_backward_kernel(const T* grad_rows, const int64_t* target, const T* weight, T* dlogp,
                                         int64_t total, int64_t classes, int64_t inner, int64_t ignore_index) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const ElementOf e(k, classes, inner);
    const int64_t t = target[e.row];
    T d = T(0);
    if (t != ignore_index) {
      if (t < 0 || t >= classes) d = quiet_nan<T>();
      else if (e.c == t) d = -(weight != nullptr ? weight[t] : T(1)) * grad_rows[e.row];
    }
    dlogp[k] = d;
  }
}

// dx_c = p_c * (a + b * W) - b * w_c - a * [c == t], a = (1 - e) w_t g, b = e g / C.
template <class T>
__global__ void cross_entropy_backward_kernel(const T* log_probs, const int64_t* target, const T* weight,
                                              const T* weight_sum, const T* grad_rows, T* dlogits, int64_t total,
                                              int64_t classes, int64_t inner, int64_t ignore_index, T smoothing) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const ElementOf e(k, classes, inner);
    const int64_t t = target[e.row];
    if (t == ignore_index) {
      dlogits[k] = T(0);
    } else if (t < 0 || t >= classes) {
      dlogits[k] = quiet_nan<T>();
    } else {
      const T g = grad_rows[e.row];
      const T a = (T(1) - smoothing) * (weight != nullptr ? weight[t] : T(1)) * g;
      const T b = smoothing / static_cast<T>(classes) * g;
      const T total_weight = weight != nullptr && smoothing != T(0) ? *weight_sum : static_cast<T>(classes);
      T d = exp_of(log_probs[k]) * (a + b * total_weight) - b * (weight != nullptr ? weight[e.c] : T(1));
      if (e.c == t) d -= a;
      dlogits[k] = d;
    }
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
void softmax_forward(const T* x, T* y, const SoftmaxShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  const int64_t rows = s.outer * s.inner;
  with_team(rows, s.size, s.inner, [&](auto team, unsigned grid) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, softmax_kernel<T, decltype(team)::value>)(x, y, rows, s.size, s.inner,
                                                                                     s.log);
  });
  EMBER_CUDA_LAUNCH_CHECK("softmax_forward");
}

template <class T>
void softmax_backward(const T* dy, const T* y, T* dx, const SoftmaxShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  const int64_t rows = s.outer * s.inner;
  with_team(rows, s.size, s.inner, [&](auto team, unsigned grid) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, softmax_backward_kernel<T, decltype(team)::value>)(
        dy, y, dx, rows, s.size, s.inner, s.log);
  });
  EMBER_CUDA_LAUNCH_CHECK("softmax_backward");
}

template <class T>
void nll_loss_forward(const T* logp, const int64_t* target, const T* weight, T* loss_rows, T* row_weight,
                      const ClassLossShape& s, cudaStream_t stream) {
  if (s.rows() <= 0) return;
  EMBER_LAUNCH(grid_for(s.rows(), kThreads), kThreads, 0, stream, nll_loss_forward_kernel<T>)(
      logp, target, weight, loss_rows, row_weight, s.rows(), s.classes, s.inner, s.ignore_index);
  EMBER_CUDA_LAUNCH_CHECK("nll_loss_forward");
}

template <class T>
void nll_loss_backward(const T* grad_rows, const int64_t* target, const T* weight, T* dlogp, const ClassLossShape& s,
                       cudaStream_t stream) {
  if (s.numel() <= 0) return;
  EMBER_LAUNCH(grid_for(s.numel(), kThreads), kThreads, 0, stream, nll_loss_backward_kernel<T>)(
      grad_rows, target, weight, dlogp, s.numel(), s.classes, s.inner, s.ignore_index);
  EMBER_CUDA_LAUNCH_CHECK("nll_loss_backward");
}

template <class T>
void cross_entropy_forward(const T* logits, const int64_t* target, const T* weight, T* log_probs, T* loss_rows,
                           T* row_weight, const ClassLossShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  const int64_t rows = s.rows();
  with_team(rows, s.classes, s.inner, [&](auto team, unsigned grid) {
    EMBER_LAUNCH(grid, kThreads, 0, stream, cross_entropy_kernel<T, decltype(team)::value>)(
        logits, target, weight, log_probs, loss_rows, row_weight, rows, s.classes, s.inner, s.ignore_index,
        static_cast<T>(s.label_smoothing));
  });
  EMBER_CUDA_LAUNCH_CHECK("cross_entropy_forward");
}

template <class T>
void cross_entropy_backward(const T* log_probs, const int64_t* target, const T* weight, const T* weight_sum,
                            const T* grad_rows, T* dlogits, const ClassLossShape& s, cudaStream_t stream) {
  if (s.numel() <= 0) return;
  EMBER_LAUNCH(grid_for(s.numel(), kThreads), kThreads, 0, stream, cross_entropy_backward_kernel<T>)(
      log_probs, target, weight, weight_sum, grad_rows, dlogits, s.numel(), s.classes, s.inner, s.ignore_index,
      static_cast<T>(s.label_smoothing));
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

#define EMBER_INSTANTIATE_CUDA_LOSS(T)                                                                           \
  template void softmax_forward<T>(const T*, T*, const SoftmaxShape&, cudaStream_t);                            \
  template void softmax_backward<T>(const T*, const T*, T*, const SoftmaxShape&, cudaStream_t);                 \
  template void nll_loss_forward<T>(const T*, const int64_t*, const T*, T*, T*, const ClassLossShape&,          \
                                    cudaStream_t);                                                              \
  template void nll_loss_backward<T>(const T*, const int64_t*, const T*, T*, const ClassLossShape&,             \
                                     cudaStream_t);                                                             \
  template void cross_entropy_forward<T>(const T*, const int64_t*, const T*, T*, T*, T*, const ClassLossShape&, \
                                         cudaStream_t);                                                         \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, const T*, const T*, T*,           \
                                          const ClassLossShape&, cudaStream_t);                                 \
  template void mse_loss_forward<T>(const T*, const T*, T*, int64_t, bool, double, cudaStream_t);               \
  template void mse_loss_backward<T>(const T*, const T*, const T*, bool, double, T*, T*, int64_t,               \
                                     cudaStream_t);
EMBER_INSTANTIATE_CUDA_LOSS(float)
EMBER_INSTANTIATE_CUDA_LOSS(double)
#undef EMBER_INSTANTIATE_CUDA_LOSS

}  // namespace ember::kernels::cuda
