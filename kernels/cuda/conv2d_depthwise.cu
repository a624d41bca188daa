// Depthwise conv2d on CUDA: direct kernels (a depthwise conv does 9 multiply-adds per output for
// 3x3, far too thin for the implicit GEMM's tiles: it is bound by memory, not arithmetic).
#include "ember/kernels/cuda/conv2d_depthwise.h"

#include <climits>
#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/common/error.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

constexpr int kThreads = 256;

struct DwDims {
  int N, C, H, W, K, M, R, S, P, Q, sh, sw, ph, pw, dh, dw;  // M = K / C, the multiplier
};

DwDims dims_of(const Conv2dShape& s) {
  DwDims d{};
  d.N = static_cast<int>(s.batch);
  d.C = static_cast<int>(s.in_channels);
  d.H = static_cast<int>(s.in_h);
  d.W = static_cast<int>(s.in_w);
  d.K = static_cast<int>(s.out_channels);
  d.M = static_cast<int>(s.out_channels / s.in_channels);
  d.R = static_cast<int>(s.kernel_h);
  d.S = static_cast<int>(s.kernel_w);
  d.P = static_cast<int>(s.out_h());
  d.Q = static_cast<int>(s.out_w());
  d.sh = static_cast<int>(s.stride_h);
  d.sw = static_cast<int>(s.stride_w);
  d.ph = static_cast<int>(s.pad_h);
  d.pw = static_cast<int>(s.pad_w);
  d.dh = static_cast<int>(s.dilation_h);
  d.dw = static_cast<int>(s.dilation_w);
  return d;
}

__device__ __forceinline__ bool inside(int v, int size) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(size);
}

// Thread i computes y[i], i = ((n * K + k) * P + p) * Q + q: consecutive threads take
// consecutive q, so the loads of a warp are (for stride 1) consecutive elements of an input row.
template <class T>
__global__ void __launch_bounds__(kThreads) forward_kernel(const T* x, const T* w, const T* bias, T* y,
                                                           DwDims d, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int q = static_cast<int>(i % d.Q);
    const int64_t npk = i / d.Q;
    const int p = static_cast<int>(npk % d.P);
    const int64_t nk = npk / d.P;
    const int k = static_cast<int>(nk % d.K);
    const int64_t n = nk / d.K;
    const T* xp = x + (n * d.C + k / d.M) * static_cast<int64_t>(d.H) * d.W;
    const T* wk = w + static_cast<int64_t>(k) * d.R * d.S;
    T acc = T(0);
    for (int r = 0; r < d.R; ++r) {
      const int h = p * d.sh - d.ph + r * d.dh;
      if (!inside(h, d.H)) continue;
      for (int s = 0; s < d.S; ++s) {
        const int ww = q * d.sw - d.pw + s * d.dw;
        if (inside(ww, d.W)) acc += wk[r * d.S + s] * xp[h * d.W + ww];
      }
    }
    y[i] = bias != nullptr ? acc + bias[k] : acc;
  }
}

// Thread i computes dx[i], i = ((n * C + c) * H + h) * W + w: the sum over the multiplier's
// channels k = c * M + m and taps (r, s) of w[k][r][s] * dy[n][k][p][q], where
// p * stride = h + pad - r * dilation (and likewise q), if integral and in range.
template <class T>
__global__ void __launch_bounds__(kThreads) backward_input_kernel(const T* dy, const T* w, T* dx, DwDims d,
                                                                  int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int iw = static_cast<int>(i % d.W);
    const int64_t nch = i / d.W;
    const int ih = static_cast<int>(nch % d.H);
    const int64_t nc = nch / d.H;
    const int c = static_cast<int>(nc % d.C);
    const int64_t n = nc / d.C;
    T acc = T(0);
    for (int m = 0; m < d.M; ++m) {
      const int k = c * d.M + m;
      const T* dyp = dy + (n * d.K + k) * static_cast<int64_t>(d.P) * d.Q;
      const T* wk = w + static_cast<int64_t>(k) * d.R * d.S;
      for (int r = 0; r < d.R; ++r) {
        const int ps = ih + d.ph - r * d.dh;
        if (ps < 0 || ps % d.sh != 0) continue;
        const int p = ps / d.sh;
        if (p >= d.P) continue;
        for (int s = 0; s < d.S; ++s) {
          const int qs = iw + d.pw - s * d.dw;
          if (qs < 0 || qs % d.sw != 0) continue;
          const int q = qs / d.sw;
          if (q < d.Q) acc += wk[r * d.S + s] * dyp[p * d.Q + q];
        }
      }
    }
    dx[i] = acc;
  }
}

// Block b computes dw[k][r][s] (b = (k * R + r) * S + s): its threads stride over the batch's
// N * P * Q products dy[n][k][p][q] * x[n][k / M][p * stride - pad + r * dilation][...], then a
// tree in shared memory adds the 256 partial sums in a fixed order.
template <class T>
__global__ void __launch_bounds__(kThreads) backward_weight_kernel(const T* dy, const T* x, T* dw, DwDims d) {
  __shared__ T partial[kThreads];
  const int b = static_cast<int>(blockIdx.x);
  const int k = b / (d.R * d.S), rs = b - k * d.R * d.S;
  const int r = rs / d.S, s = rs - r * d.S;
  const int PQ = d.P * d.Q;
  const int64_t total = static_cast<int64_t>(d.N) * PQ;
  T sum = T(0);
  for (int64_t j = threadIdx.x; j < total; j += kThreads) {
    const int64_t n = j / PQ;
    const int pq = static_cast<int>(j - n * PQ);
    const int p = pq / d.Q, q = pq - p * d.Q;
    const int h = p * d.sh - d.ph + r * d.dh, ww = q * d.sw - d.pw + s * d.dw;
    if (!inside(h, d.H) || !inside(ww, d.W)) continue;
    const T* xp = x + (n * d.C + k / d.M) * static_cast<int64_t>(d.H) * d.W;
    sum += dy[(n * d.K + k) * static_cast<int64_t>(PQ) + pq] * xp[h * d.W + ww];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();  // the next round reads what this one wrote
  }
  if (threadIdx.x == 0) dw[b] = partial[0];
}

// The sizes the kernels index with int: a plane and one image's planes, and the weight.
void check_sizes(const Conv2dShape& s, const char* op) {
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h() * s.out_w();
  EMBER_CHECK(in_plane < INT_MAX && out_plane < INT_MAX && s.batch < INT_MAX &&
                  s.out_channels * s.kernel_h * s.kernel_w < INT_MAX,
              op, " (CUDA, depthwise): each plane and the weight must hold fewer than 2^31 elements, got H*W = ",
              in_plane, ", P*Q = ", out_plane);
  EMBER_CHECK(s.depthwise(), op, " (CUDA, depthwise): needs groups == in_channels, got groups ", s.groups,
              " for ", s.in_channels, " channels");
}

unsigned blocks_for(int64_t n) { return detail::grid_for(n, kThreads, 65535 * 8); }

}  // namespace

template <class T>
void conv2d_depthwise_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                              cudaStream_t stream) {
  check_sizes(s, "conv2d");
  const int64_t total = s.batch * s.out_channels * s.out_h() * s.out_w();
  if (total == 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, forward_kernel<T>)(x, w, bias_or_null, y, dims_of(s), total);
  EMBER_CUDA_LAUNCH_CHECK("conv2d (depthwise)");
}

template <class T>
void conv2d_depthwise_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, cudaStream_t stream) {
  check_sizes(s, "conv2d backward (input)");
  const int64_t total = s.batch * s.in_channels * s.in_h * s.in_w;
  if (total == 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, backward_input_kernel<T>)(dy, w, dx, dims_of(s), total);
  EMBER_CUDA_LAUNCH_CHECK("conv2d backward (input, depthwise)");
}

template <class T>
void conv2d_depthwise_backward_weight(const T* dy, const T* x, T* dw, const Conv2dShape& s, cudaStream_t stream) {
  check_sizes(s, "conv2d backward (weight)");
  const int64_t weights = s.out_channels * s.kernel_h * s.kernel_w;
  if (weights == 0) return;
  EMBER_LAUNCH(static_cast<unsigned>(weights), kThreads, 0, stream, backward_weight_kernel<T>)(dy, x, dw, dims_of(s));
  EMBER_CUDA_LAUNCH_CHECK("conv2d backward (weight, depthwise)");
}

#define EMBER_INSTANTIATE_DEPTHWISE(T)                                                                         \
  template void conv2d_depthwise_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, cudaStream_t); \
  template void conv2d_depthwise_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, cudaStream_t);    \
  template void conv2d_depthwise_backward_weight<T>(const T*, const T*, T*, const Conv2dShape&, cudaStream_t);
EMBER_INSTANTIATE_DEPTHWISE(float)
EMBER_INSTANTIATE_DEPTHWISE(double)
#undef EMBER_INSTANTIATE_DEPTHWISE

}  // namespace ember::kernels::cuda
