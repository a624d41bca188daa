// 2-D pooling (max, average, adaptive average, adaptive max): checks, one dispatch to kernels/
// (CPU, the hand-written CUDA kernels, or cuDNN for plain max pooling) per direction, and each
// backward node. The hand-written max kernels keep each window's argmax for the backward; cuDNN's
// backward finds the max again from the saved input and output.
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/kernels/cpu/pool.h"
#include "ember/kernels/cuda/pool.h"
#include "ember/kernels/vendor/cudnn_pool.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn {
namespace {

void check_window(const char* op, const ExpandingArray<2>& kernel_size, const ExpandingArray<2>& stride,
                  const ExpandingArray<2>& padding) {
  EMBER_CHECK(kernel_size[0] > 0 && kernel_size[1] > 0, op, ": kernel_size must be positive, got ",
              compact_str(kernel_size));
  EMBER_CHECK(stride[0] > 0 && stride[1] > 0, op, ": stride must be positive, got ", compact_str(stride));
  EMBER_CHECK(padding[0] >= 0 && padding[1] >= 0, op, ": padding must be non-negative, got ", compact_str(padding));
}

}  // namespace

void check_max_pool2d_options(const ExpandingArray<2>& kernel_size, const MaxPool2dOptions& o) {
  constexpr const char* op = "max_pool2d";
  check_window(op, kernel_size, o.stride.value_or(kernel_size), o.padding);
  EMBER_CHECK(o.dilation[0] > 0 && o.dilation[1] > 0, op, ": dilation must be positive, got ",
              compact_str(o.dilation));
  for (size_t i = 0; i < 2; ++i) {
    const int64_t effective = (kernel_size[i] - 1) * o.dilation[i] + 1;
    EMBER_CHECK(2 * o.padding[i] <= effective, op, ": pad should be at most half of effective kernel size, but got padding=",
                compact_str(o.padding), ", kernel_size=", compact_str(kernel_size), " and dilation=",
                compact_str(o.dilation));
  }
}

void check_avg_pool2d_options(const ExpandingArray<2>& kernel_size, const AvgPool2dOptions& o) {
  constexpr const char* op = "avg_pool2d";
  check_window(op, kernel_size, o.stride.value_or(kernel_size), o.padding);
  EMBER_CHECK(2 * o.padding[0] <= kernel_size[0] && 2 * o.padding[1] <= kernel_size[1], op,
              ": pad should be at most half of kernel size, but got padding=", compact_str(o.padding),
              ", kernel_size=", compact_str(kernel_size));
  EMBER_CHECK(!o.divisor_override || *o.divisor_override != 0, op, ": divisor_override must not be zero");
}

namespace functional {
namespace {

using autograd::SavedTensor;
using kernels::AdaptivePool2dShape;
using kernels::Pool2dShape;

// The pooled input as [batch, channels, height, width] (a 3-D [C, H, W] input is one batch) and
// the output shape for out_h x out_w, 3-D or 4-D as the input.
struct Planes {
  int64_t batch, channels, in_h, in_w;
  Shape out_shape(int64_t out_h, int64_t out_w, const Tensor& input) const {
    if (input.dim() == 3) return Shape{channels, out_h, out_w};
    return Shape{batch, channels, out_h, out_w};
  }
};

Planes planes_of(const Tensor& input, const char* op) {
  detail::check_defined(input, op, "input");
  EMBER_CHECK(input.dim() == 4 || input.dim() == 3, op, ": input must be 4-D [N, C, H, W] or 3-D [C, H, W], got ",
              input.sizes());
  detail::check_floating(input, op, "input");
  const int64_t d = input.dim();
  Planes p{d == 4 ? input.size(0) : 1, input.size(d - 3), input.size(d - 2), input.size(d - 1)};
  EMBER_CHECK(p.in_h > 0 && p.in_w > 0, op, ": input height and width must be positive, got ", input.sizes());
  return p;
}

Pool2dShape pool_shape(const Planes& p, const ExpandingArray<2>& kernel, const ExpandingArray<2>& stride,
                       const ExpandingArray<2>& padding, const ExpandingArray<2>& dilation, bool ceil_mode,
                       const Tensor& input, const char* op) {
  Pool2dShape s{p.batch,   p.channels, p.in_h,     p.in_w,      kernel[0],   kernel[1], stride[0],
                stride[1], padding[0], padding[1], dilation[0], dilation[1], ceil_mode};
  EMBER_CHECK(s.out_h() >= 1 && s.out_w() >= 1, op, ": the output would be ", s.out_h(), "x", s.out_w(),
              ", it must be at least 1x1 (input ", input.sizes(), ", kernel ", s.kernel_h, "x", s.kernel_w,
              ", stride ", s.stride_h, "x", s.stride_w, ", padding ", s.pad_h, "x", s.pad_w, ", dilation ",
              s.dilation_h, "x", s.dilation_w, ", ceil_mode ", ceil_mode ? "true" : "false", ")");
  return s;
}

AdaptivePool2dShape adaptive_shape(const Planes& p, const ExpandingArray<2>& output_size, const char* op) {
  EMBER_CHECK(output_size[0] > 0 && output_size[1] > 0, op, ": output_size must be positive, got ",
              compact_str(output_size));
  return AdaptivePool2dShape{p.batch, p.channels, p.in_h, p.in_w, output_size[0], output_size[1]};
}

// Whether cuDNN's max pooling computes this pool: it has no dilation and rounds the output size
// down, so dilation != 1, or a ceil mode that adds a window, take the hand-written kernels.
bool cudnn_can_pool(const Pool2dShape& s) {
  Pool2dShape floor = s;
  floor.ceil_mode = false;
  return s.dilation_h == 1 && s.dilation_w == 1 && floor.out_h() == s.out_h() && floor.out_w() == s.out_w();
}

}  // namespace

Tensor max_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const MaxPool2dOptions& o) {
  constexpr const char* op = "max_pool2d";
  const Planes p = planes_of(input, op);
  check_max_pool2d_options(kernel_size, o);
  const Pool2dShape s =
      pool_shape(p, kernel_size, o.stride.value_or(kernel_size), o.padding, o.dilation, o.ceil_mode, input, op);
  Tensor x = input.detach().contiguous();
  const Shape out_shape = p.out_shape(s.out_h(), s.out_w(), input);
  Tensor out = empty(out_shape, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  const bool vendor = on.vendor() && cudnn_can_pool(s);
  Tensor argmax = vendor ? Tensor() : empty(out_shape, {.dtype = kInt64, .device = x.device()});
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s);
    } else if (vendor) {
      kernels::vendor::cudnn_max_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, on.device_index(), on.stream());
    } else {
      kernels::cuda::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s, on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    SavedTensor saved_x = vendor ? SavedTensor(x) : SavedTensor();
    SavedTensor saved_out = vendor ? SavedTensor(out) : SavedTensor();
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      KernelContext on(dy, backend);
      visit_floating(dy.dtype(), "max_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s);
        } else if (vendor) {
          Tensor xs = saved_x.unpack("max_pool2d"), ys = saved_out.unpack("max_pool2d");
          kernels::vendor::cudnn_max_pool2d_backward<T>(xs.data<T>(), ys.data<T>(), dy.data<T>(), dx.data<T>(), s,
                                                        on.device_index(), on.stream());
        } else {
          kernels::cuda::max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor avg_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const AvgPool2dOptions& o) {
  constexpr const char* op = "avg_pool2d";
  const Planes p = planes_of(input, op);
  check_avg_pool2d_options(kernel_size, o);
  const Pool2dShape s = pool_shape(p, kernel_size, o.stride.value_or(kernel_size), o.padding, 1, o.ceil_mode, input, op);
  const bool include_pad = o.count_include_pad;
  const int64_t divisor = o.divisor_override.value_or(0);
  Tensor x = input.detach().contiguous();
  Tensor out = empty(p.out_shape(s.out_h(), s.out_w(), input), {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::avg_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, include_pad, divisor);
    } else {
      kernels::cuda::avg_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, include_pad, divisor, on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      KernelContext on(dy, backend);
      visit_floating(dy.dtype(), "avg_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::avg_pool2d_backward<T>(dy.data<T>(), dx.data<T>(), s, include_pad, divisor);
        } else {
          kernels::cuda::avg_pool2d_backward<T>(dy.data<T>(), dx.data<T>(), s, include_pad, divisor, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& input, ExpandingArray<2> output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  const Planes p = planes_of(input, op);
  const AdaptivePool2dShape s = adaptive_shape(p, output_size, op);
  Tensor x = input.detach().contiguous();
  Tensor out = empty(p.out_shape(s.out_h, s.out_w, input), {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::adaptive_avg_pool2d_forward<T>(x.data<T>(), out.data<T>(), s);
    } else {
      kernels::cuda::adaptive_avg_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      KernelContext on(dy, backend);
      visit_floating(dy.dtype(), "adaptive_avg_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::adaptive_avg_pool2d_backward<T>(dy.data<T>(), dx.data<T>(), s);
        } else {
          kernels::cuda::adaptive_avg_pool2d_backward<T>(dy.data<T>(), dx.data<T>(), s, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor adaptive_max_pool2d(const Tensor& input, ExpandingArray<2> output_size) {
  constexpr const char* op = "adaptive_max_pool2d";
  const Planes p = planes_of(input, op);
  const AdaptivePool2dShape s = adaptive_shape(p, output_size, op);
  Tensor x = input.detach().contiguous();
  const Shape out_shape = p.out_shape(s.out_h, s.out_w, input);
  Tensor out = empty(out_shape, {.dtype = x.dtype(), .device = x.device()});
  Tensor argmax = empty(out_shape, {.dtype = kInt64, .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::adaptive_max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s);
    } else {
      kernels::cuda::adaptive_max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s,
                                                    on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      KernelContext on(dy, backend);
      visit_floating(dy.dtype(), "adaptive_max_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::adaptive_max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s);
        } else {
          kernels::cuda::adaptive_max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s,
                                                         on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace functional
}  // namespace ember::nn
