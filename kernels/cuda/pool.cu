// 2-D pooling: one thread per output element forward, one thread per input element backward (a
// gather over the windows that contain it, in output order, so overlapping windows need no
// atomics and the sums run in the CPU twin's order).
#include "ember/kernels/cuda/pool.h"

#include <algorithm>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t work) { return detail::grid_for(work, kThreads, 65535); }

// The geometry the kernels need, with the output size worked out on the host.
struct PoolGeometry {
  int64_t planes, in_h, in_w, out_h, out_w, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int64_t dilation_h, dilation_w;
};

PoolGeometry geometry_of(const Pool2dShape& s) {
  return PoolGeometry{s.batch * s.channels, s.in_h,     s.in_w,     s.out_h(),  s.out_w(),      s.kernel_h,
                      s.kernel_w,           s.stride_h, s.stride_w, s.pad_h,    s.pad_w,        s.dilation_h,
                      s.dilation_w};
}

using detail::negative_infinity;

// The grid-stride loop every kernel here runs.
#define EMBER_POOL_LOOP(i, total)                                                            \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (total); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <class T>
__global__ void max_pool2d_forward_kernel(const T* x, T* y, int64_t* argmax, PoolGeometry g) {
  const int64_t out_plane = g.out_h * g.out_w, total = g.planes * out_plane;
  EMBER_POOL_LOOP(o, total) {
    const int64_t plane = o / out_plane, within = o - plane * out_plane;
    const int64_t oh = within / g.out_w, ow = within - oh * g.out_w;
    const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
    const int64_t h_end = h0 + (g.kernel_h - 1) * g.dilation_h + 1, w_end = w0 + (g.kernel_w - 1) * g.dilation_w + 1;
    const int64_t h_lo = first_tap(h0, g.dilation_h), h_hi = h_end < g.in_h ? h_end : g.in_h;
    const int64_t w_lo = first_tap(w0, g.dilation_w), w_hi = w_end < g.in_w ? w_end : g.in_w;
    const T* in = x + plane * g.in_h * g.in_w;
    // Same loop as the CPU's general path: -inf start, strict > keeps the first of ties, a NaN wins.
    T best = negative_infinity<T>();
    int64_t best_index = h_lo * g.in_w + w_lo;
    for (int64_t ih = h_lo; ih < h_hi; ih += g.dilation_h) {
      for (int64_t iw = w_lo; iw < w_hi; iw += g.dilation_w) {
        const int64_t index = ih * g.in_w + iw;
        const T v = in[index];
        if (v > best || v != v) {
          best = v;
          best_index = index;
        }
      }
    }
    y[o] = best;
    argmax[o] = best_index;
  }
}

// The output rows whose (effective, extent `kernel`) window [o * stride - pad, ... + kernel) holds
// input row i: o >= ceil((i + pad - kernel + 1) / stride) and o <= floor((i + pad) / stride).
__device__ __forceinline__ void windows_holding(int64_t i, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                                                int64_t& lo, int64_t& hi) {
  const int64_t t = i + pad - kernel + 1;
  lo = t <= 0 ? 0 : (t + stride - 1) / stride;
  const int64_t top = (i + pad) / stride;
  hi = top < out - 1 ? top : out - 1;
}

// The adaptive windows holding input row i: floor(i * out / in) <= o < ceil((i + 1) * out / in).
__device__ __forceinline__ void adaptive_windows_holding(int64_t i, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = (i * out) / in;
  const int64_t top = ((i + 1) * out + in - 1) / in - 1;
  hi = top < out - 1 ? top : out - 1;
}

template <class T>
__global__ void max_pool2d_backward_kernel(const T* dy, const int64_t* argmax, T* dx, PoolGeometry g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w, total = g.planes * in_plane;
  EMBER_POOL_LOOP(i, total) {
    const int64_t plane = i / in_plane, index = i - plane * in_plane;
    const int64_t ih = index / g.in_w, iw = index - ih * g.in_w;
    // Every window whose extent holds the element; the argmax test picks the ones it won.
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    windows_holding(ih, (g.kernel_h - 1) * g.dilation_h + 1, g.stride_h, g.pad_h, g.out_h, oh_lo, oh_hi);
    windows_holding(iw, (g.kernel_w - 1) * g.dilation_w + 1, g.stride_w, g.pad_w, g.out_w, ow_lo, ow_hi);
    const T* grad = dy + plane * out_plane;
    const int64_t* arg = argmax + plane * out_plane;
    T sum = T(0);
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        const int64_t o = oh * g.out_w + ow;
        if (arg[o] == index) sum += grad[o];
      }
    }
    dx[i] = sum;
  }
}

template <class T>
__global__ void avg_pool2d_forward_kernel(const T* x, T* y, PoolGeometry g, bool count_include_pad,
                                          int64_t divisor_override) {
  const int64_t out_plane = g.out_h * g.out_w, total = g.planes * out_plane;
  EMBER_POOL_LOOP(o, total) {
    const int64_t plane = o / out_plane, within = o - plane * out_plane;
    const int64_t oh = within / g.out_w, ow = within - oh * g.out_w;
    const PoolSpan h = avg_pool_span(oh, g.stride_h, g.pad_h, g.kernel_h, g.in_h);
    const PoolSpan w = avg_pool_span(ow, g.stride_w, g.pad_w, g.kernel_w, g.in_w);
    const T* in = x + plane * g.in_h * g.in_w;
    T sum = T(0);
    for (int64_t ih = h.lo; ih < h.hi; ++ih) {
      for (int64_t iw = w.lo; iw < w.hi; ++iw) sum += in[ih * g.in_w + iw];
    }
    const int64_t divisor = avg_pool_divisor(h, w, count_include_pad, divisor_override);
    y[o] = divisor != 0 ? sum / T(divisor) : T(0);
  }
}

template <class T>
__global__ void avg_pool2d_backward_kernel(const T* dy, T* dx, PoolGeometry g, bool count_include_pad,
                                           int64_t divisor_override) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w, total = g.planes * in_plane;
  EMBER_POOL_LOOP(i, total) {
    const int64_t plane = i / in_plane, index = i - plane * in_plane;
    const int64_t ih = index / g.in_w, iw = index - ih * g.in_w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    windows_holding(ih, g.kernel_h, g.stride_h, g.pad_h, g.out_h, oh_lo, oh_hi);
    windows_holding(iw, g.kernel_w, g.stride_w, g.pad_w, g.out_w, ow_lo, ow_hi);
    const T* grad = dy + plane * out_plane;
    T sum = T(0);
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      const PoolSpan h = avg_pool_span(oh, g.stride_h, g.pad_h, g.kernel_h, g.in_h);
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        const PoolSpan w = avg_pool_span(ow, g.stride_w, g.pad_w, g.kernel_w, g.in_w);
        const int64_t divisor = avg_pool_divisor(h, w, count_include_pad, divisor_override);
        if (divisor != 0) sum += grad[oh * g.out_w + ow] / T(divisor);
      }
    }
    dx[i] = sum;
  }
}

template <class T>
__global__ void adaptive_avg_pool2d_forward_kernel(const T* x, T* y, AdaptivePool2dShape s) {
  const int64_t out_plane = s.out_h * s.out_w, total = s.batch * s.channels * out_plane;
  EMBER_POOL_LOOP(o, total) {
    const int64_t plane = o / out_plane, within = o - plane * out_plane;
    const int64_t oh = within / s.out_w, ow = within - oh * s.out_w;
    const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
    const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
    const T* in = x + plane * s.in_h * s.in_w;
    T sum = T(0);
    for (int64_t ih = h_lo; ih < h_hi; ++ih) {
      for (int64_t iw = w_lo; iw < w_hi; ++iw) sum += in[ih * s.in_w + iw];
    }
    y[o] = sum / T((h_hi - h_lo) * (w_hi - w_lo));
  }
}

template <class T>
__global__ void adaptive_avg_pool2d_backward_kernel(const T* dy, T* dx, AdaptivePool2dShape s) {
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
  const int64_t total = s.batch * s.channels * in_plane;
  EMBER_POOL_LOOP(i, total) {
    const int64_t plane = i / in_plane, index = i - plane * in_plane;
    const int64_t ih = index / s.in_w, iw = index - ih * s.in_w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    adaptive_windows_holding(ih, s.in_h, s.out_h, oh_lo, oh_hi);
    adaptive_windows_holding(iw, s.in_w, s.out_w, ow_lo, ow_hi);
    const T* grad = dy + plane * out_plane;
    T sum = T(0);
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
      if (ih < h_lo || ih >= h_hi) continue;
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
        if (iw < w_lo || iw >= w_hi) continue;
        sum += grad[oh * s.out_w + ow] / T((h_hi - h_lo) * (w_hi - w_lo));
      }
    }
    dx[i] = sum;
  }
}

template <class T>
__global__ void adaptive_max_pool2d_forward_kernel(const T* x, T* y, int64_t* argmax, AdaptivePool2dShape s) {
  const int64_t out_plane = s.out_h * s.out_w, total = s.batch * s.channels * out_plane;
  EMBER_POOL_LOOP(o, total) {
    const int64_t plane = o / out_plane, within = o - plane * out_plane;
    const int64_t oh = within / s.out_w, ow = within - oh * s.out_w;
    const int64_t h_lo = adaptive_start(oh, s.in_h, s.out_h), h_hi = adaptive_end(oh, s.in_h, s.out_h);
    const int64_t w_lo = adaptive_start(ow, s.in_w, s.out_w), w_hi = adaptive_end(ow, s.in_w, s.out_w);
    const T* in = x + plane * s.in_h * s.in_w;
    T best = negative_infinity<T>();
    int64_t best_index = h_lo * s.in_w + w_lo;
    for (int64_t ih = h_lo; ih < h_hi; ++ih) {
      for (int64_t iw = w_lo; iw < w_hi; ++iw) {
        const T v = in[ih * s.in_w + iw];
        if (v > best || v != v) {
          best = v;
          best_index = ih * s.in_w + iw;
        }
      }
    }
    y[o] = best;
    argmax[o] = best_index;
  }
}

template <class T>
__global__ void adaptive_max_pool2d_backward_kernel(const T* dy, const int64_t* argmax, T* dx, AdaptivePool2dShape s) {
  const int64_t in_plane = s.in_h * s.in_w, out_plane = s.out_h * s.out_w;
  const int64_t total = s.batch * s.channels * in_plane;
  EMBER_POOL_LOOP(i, total) {
    const int64_t plane = i / in_plane, index = i - plane * in_plane;
    const int64_t ih = index / s.in_w, iw = index - ih * s.in_w;
    int64_t oh_lo, oh_hi, ow_lo, ow_hi;
    adaptive_windows_holding(ih, s.in_h, s.out_h, oh_lo, oh_hi);
    adaptive_windows_holding(iw, s.in_w, s.out_w, ow_lo, ow_hi);
    const T* grad = dy + plane * out_plane;
    const int64_t* arg = argmax + plane * out_plane;
    T sum = T(0);
    for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
      for (int64_t ow = ow_lo; ow <= ow_hi; ++ow) {
        const int64_t o = oh * s.out_w + ow;
        if (arg[o] == index) sum += grad[o];
      }
    }
    dx[i] = sum;
  }
}

#undef EMBER_POOL_LOOP

}  // namespace

template <class T>
void max_pool2d_forward(const T* x, T* y, int64_t* argmax, const Pool2dShape& s, cudaStream_t stream) {
  const PoolGeometry g = geometry_of(s);
  const int64_t total = g.planes * g.out_h * g.out_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, max_pool2d_forward_kernel<T>)(x, y, argmax, g);
  EMBER_CUDA_LAUNCH_CHECK("max_pool2d_forward");
}

template <class T>
void max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const Pool2dShape& s, cudaStream_t stream) {
  const PoolGeometry g = geometry_of(s);
  const int64_t total = g.planes * g.in_h * g.in_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, max_pool2d_backward_kernel<T>)(dy, argmax, dx, g);
  EMBER_CUDA_LAUNCH_CHECK("max_pool2d_backward");
}

template <class T>
void avg_pool2d_forward(const T* x, T* y, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override,
                        cudaStream_t stream) {
  const PoolGeometry g = geometry_of(s);
  const int64_t total = g.planes * g.out_h * g.out_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, avg_pool2d_forward_kernel<T>)(x, y, g, count_include_pad,
                                                                                    divisor_override);
  EMBER_CUDA_LAUNCH_CHECK("avg_pool2d_forward");
}

template <class T>
void avg_pool2d_backward(const T* dy, T* dx, const Pool2dShape& s, bool count_include_pad, int64_t divisor_override,
                         cudaStream_t stream) {
  const PoolGeometry g = geometry_of(s);
  const int64_t total = g.planes * g.in_h * g.in_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, avg_pool2d_backward_kernel<T>)(dy, dx, g, count_include_pad,
                                                                                     divisor_override);
  EMBER_CUDA_LAUNCH_CHECK("avg_pool2d_backward");
}

template <class T>
void adaptive_avg_pool2d_forward(const T* x, T* y, const AdaptivePool2dShape& s, cudaStream_t stream) {
  const int64_t total = s.batch * s.channels * s.out_h * s.out_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, adaptive_avg_pool2d_forward_kernel<T>)(x, y, s);
  EMBER_CUDA_LAUNCH_CHECK("adaptive_avg_pool2d_forward");
}

template <class T>
void adaptive_avg_pool2d_backward(const T* dy, T* dx, const AdaptivePool2dShape& s, cudaStream_t stream) {
  const int64_t total = s.batch * s.channels * s.in_h * s.in_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, adaptive_avg_pool2d_backward_kernel<T>)(dy, dx, s);
  EMBER_CUDA_LAUNCH_CHECK("adaptive_avg_pool2d_backward");
}

template <class T>
void adaptive_max_pool2d_forward(const T* x, T* y, int64_t* argmax, const AdaptivePool2dShape& s,
                                 cudaStream_t stream) {
  const int64_t total = s.batch * s.channels * s.out_h * s.out_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, adaptive_max_pool2d_forward_kernel<T>)(x, y, argmax, s);
  EMBER_CUDA_LAUNCH_CHECK("adaptive_max_pool2d_forward");
}

template <class T>
void adaptive_max_pool2d_backward(const T* dy, const int64_t* argmax, T* dx, const AdaptivePool2dShape& s,
                                  cudaStream_t stream) {
  const int64_t total = s.batch * s.channels * s.in_h * s.in_w;
  if (total <= 0) return;
  EMBER_LAUNCH(blocks_for(total), kThreads, 0, stream, adaptive_max_pool2d_backward_kernel<T>)(dy, argmax, dx, s);
  EMBER_CUDA_LAUNCH_CHECK("adaptive_max_pool2d_backward");
}

#define EMBER_INSTANTIATE_POOL(T)                                                                                \
  template void max_pool2d_forward<T>(const T*, T*, int64_t*, const Pool2dShape&, cudaStream_t);                \
  template void max_pool2d_backward<T>(const T*, const int64_t*, T*, const Pool2dShape&, cudaStream_t);         \
  template void avg_pool2d_forward<T>(const T*, T*, const Pool2dShape&, bool, int64_t, cudaStream_t);           \
  template void avg_pool2d_backward<T>(const T*, T*, const Pool2dShape&, bool, int64_t, cudaStream_t);          \
  template void adaptive_avg_pool2d_forward<T>(const T*, T*, const AdaptivePool2dShape&, cudaStream_t);         \
  template void adaptive_avg_pool2d_backward<T>(const T*, T*, const AdaptivePool2dShape&, cudaStream_t);        \
  template void adaptive_max_pool2d_forward<T>(const T*, T*, int64_t*, const AdaptivePool2dShape&, cudaStream_t); \
  template void adaptive_max_pool2d_backward<T>(const T*, const int64_t*, T*, const AdaptivePool2dShape&, cudaStream_t);
EMBER_INSTANTIATE_POOL(float)
EMBER_INSTANTIATE_POOL(double)
#undef EMBER_INSTANTIATE_POOL

}  // namespace ember::kernels::cuda
