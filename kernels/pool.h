// The geometry of 2-D pooling, shared by its CPU (kernels/cpu/pool.h), CUDA (kernels/cuda/pool.h)
// and cuDNN (kernels/vendor/cudnn_pool.h) kernels, and the window arithmetic both twins use
// (constexpr, so the CUDA kernels call the same functions as the CPU ones).
// defines: ember::kernels::Pool2dShape, AdaptivePool2dShape, PoolSpan, avg_pool_span,
//          avg_pool_divisor, adaptive_start, adaptive_end,
//          first_tap
#pragma once

#include <cstdint>

namespace ember::kernels {

// x: [batch, channels, in_h, in_w]; y and argmax: [batch, channels, out_h(), out_w()]. Height and
// width are independent (kernel_h != kernel_w, stride_h != stride_w, pad_h != pad_w). Window oh
// covers rows oh * stride_h - pad_h + j * dilation_h, j < kernel_h (dilation: max pooling only).
struct Pool2dShape {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;
  int64_t out_h() const { return out_size(in_h, kernel_h, stride_h, pad_h, dilation_h); }
  int64_t out_w() const { return out_size(in_w, kernel_w, stride_w, pad_w, dilation_w); }
  // PyTorch's pooling_output_shape: (in + 2 pad - dilation (kernel - 1) - 1 [+ stride - 1 in
  // ceil mode]) / stride + 1, rounded down; in ceil mode the last window must start inside the
  // input or its left padding, else it is dropped. May be <= 0 (the callers reject that).
  int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) const {
    const int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) --out;
    return out;
  }
};

// Adaptive pooling: x [batch, channels, in_h, in_w] -> [batch, channels, out_h, out_w]; output
// row oh averages (or maxes) input rows [adaptive_start(oh, in_h, out_h), adaptive_end(...)).
struct AdaptivePool2dShape {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};

// PyTorch's adaptive windows: start = floor(i * in / out), end = ceil((i + 1) * in / out).
constexpr int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
constexpr int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

// The first row (or column) of a dilated max-pool window starting at `start` that is not in the
// left padding: start + j * dilation for the least such j (PyTorch steps over the padding so).
constexpr int64_t first_tap(int64_t start, int64_t dilation) {
  return start >= 0 ? start : start + ((-start + dilation - 1) / dilation) * dilation;
}

// One dimension of an average-pool window: the input range [lo, hi) it sums, and `padded`, its
// extent clipped to the padded input (PyTorch's pool_size factor for count_include_pad).
struct PoolSpan {
  int64_t lo, hi, padded;
};

constexpr PoolSpan avg_pool_span(int64_t o, int64_t stride, int64_t pad, int64_t kernel, int64_t in) {
  const int64_t start = o * stride - pad;
  const int64_t end = start + kernel < in + pad ? start + kernel : in + pad;
  return PoolSpan{start > 0 ? start : 0, end < in ? end : in, end - start};
}

// What an average-pool window's sum is divided by: divisor_override when not 0 (PyTorch allows a
// negative one), else the padded
// window (count_include_pad) or the input elements it covers.
constexpr int64_t avg_pool_divisor(PoolSpan h, PoolSpan w, bool count_include_pad, int64_t divisor_override) {
  return divisor_override != 0 ? divisor_override
         : count_include_pad ? h.padded * w.padded
                             : (h.hi - h.lo) * (w.hi - w.lo);
}

}  // namespace ember::kernels
