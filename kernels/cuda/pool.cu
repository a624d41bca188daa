// max_pool2d: one thread per output element forward, one thread per input element backward
// (a gather over the windows that contain it, so overlapping windows need no atomics).
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
};

PoolGeometry geometry_of(const Pool2dShape& s) {
  return PoolGeometry{s.batch * s.channels, s.in_h,     s.in_w,     s.out_h(),  s.out_w(), s.kernel_h,
                      s.kernel_w,           s.stride_h, s.stride_w, s.pad_h,    s.pad_w};
}

using detail::negative_infinity;

template <class T>
__global__ void max_pool2d_forward_kernel(const T* x, T* y, int64_t* argmax, PoolGeometry g) {
  const int64_t out_plane = g.out_h * g.out_w, total = g.planes * out_plane;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = o / out_plane, within = o - plane * out_plane;
    const int64_t oh = within / g.out_w, ow = within - oh * g.out_w;
    const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
    const int64_t h_lo = h0 > 0 ? h0 : 0, h_hi = h0 + g.kernel_h < g.in_h ? h0 + g.kernel_h : g.in_h;
    const int64_t w_lo = w0 > 0 ? w0 : 0, w_hi = w0 + g.kernel_w < g.in_w ? w0 + g.kernel_w : g.in_w;
    const T* in = x + plane * g.in_h * g.in_w;
    // Same loop as the CPU's general path: -inf start, strict > keeps the first of ties, a NaN wins.
    T best = negative_infinity<T>();
    int64_t best_index = h_lo * g.in_w + w_lo;
    for (int64_t ih = h_lo; ih < h_hi; ++ih) {
      for (int64_t iw = w_lo; iw < w_hi; ++iw) {
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

template <class T>
__global__ void max_pool2d_backward_kernel(const T* dy, const int64_t* argmax, T* dx, PoolGeometry g) {
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w, total = g.planes * in_plane;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = i / in_plane, index = i - plane * in_plane;
    const int64_t ih = index / g.in_w, iw = index - ih * g.in_w;
    // Output rows whose window [oh * stride - pad, oh * stride - pad + kernel) holds ih:
    // oh >= ceil((ih + pad - kernel + 1) / stride) and oh <= floor((ih + pad) / stride).
    const int64_t th = ih + g.pad_h - g.kernel_h + 1, tw = iw + g.pad_w - g.kernel_w + 1;
    const int64_t oh_lo = th <= 0 ? 0 : (th + g.stride_h - 1) / g.stride_h;
    const int64_t ow_lo = tw <= 0 ? 0 : (tw + g.stride_w - 1) / g.stride_w;
    const int64_t oh_top = (ih + g.pad_h) / g.stride_h, ow_top = (iw + g.pad_w) / g.stride_w;
    const int64_t oh_hi = oh_top < g.out_h - 1 ? oh_top : g.out_h - 1;
    const int64_t ow_hi = ow_top < g.out_w - 1 ? ow_top : g.out_w - 1;
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

template void max_pool2d_forward<float>(const float*, float*, int64_t*, const Pool2dShape&, cudaStream_t);
template void max_pool2d_forward<double>(const double*, double*, int64_t*, const Pool2dShape&, cudaStream_t);
template void max_pool2d_backward<float>(const float*, const int64_t*, float*, const Pool2dShape&, cudaStream_t);
template void max_pool2d_backward<double>(const double*, const int64_t*, double*, const Pool2dShape&,
                                          cudaStream_t);

}  // namespace ember::kernels::cuda
