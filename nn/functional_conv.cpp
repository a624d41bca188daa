// conv2d: checks, dispatch to kernels/cpu/conv2d or (CUDA) kernels/cuda/conv2d or cuDNN by
// ember::backend(), and its backward node.
#include "ember/core/autograd.h"
#include "ember/core/backend.h"
#include "ember/kernels/cpu/conv2d.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

#ifdef EMBER_WITH_CUDA
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/conv2d.h"
#include "ember/kernels/vendor/cudnn_conv.h"
#endif

namespace ember::nn::functional {

using autograd::SavedTensor;
using kernels::cpu::Conv2dShape;

namespace {

Conv2dShape conv_shape(const Tensor& input, const Tensor& weight, const Conv2dOptions& o) {
  constexpr const char* op = "conv2d";
  detail::check_defined(input, op, "input");
  detail::check_defined(weight, op, "weight");
  EMBER_CHECK(input.dim() == 4, op, ": input must be 4-D [N, C, H, W], got ", input.sizes());
  EMBER_CHECK(weight.dim() == 4, op, ": weight must be 4-D [out_channels, in_channels, kH, kW], got ",
              weight.sizes());
  detail::check_floating(input, op, "input");
  detail::check_same(input, weight, op, "input", "weight");
  if (o.groups != 1) {
    throw NotImplemented(ember::detail::str(op, ": groups=", o.groups, " is not supported yet (only groups=1)"));
  }
  EMBER_CHECK(o.stride > 0, op, ": stride must be positive, got ", o.stride);
  EMBER_CHECK(o.padding >= 0, op, ": padding must be non-negative, got ", o.padding);
  EMBER_CHECK(o.dilation > 0, op, ": dilation must be positive, got ", o.dilation);
  EMBER_CHECK(input.size(1) == weight.size(1), op, ": input has ", input.size(1),
              " channels but weight ", weight.sizes(), " expects ", weight.size(1));
  Conv2dShape s;
  s.batch = input.size(0);
  s.in_channels = input.size(1);
  s.in_h = input.size(2);
  s.in_w = input.size(3);
  s.out_channels = weight.size(0);
  s.kernel_h = weight.size(2);
  s.kernel_w = weight.size(3);
  s.stride_h = s.stride_w = o.stride;
  s.pad_h = s.pad_w = o.padding;
  s.dilation_h = s.dilation_w = o.dilation;
  int64_t span_h = o.dilation * (s.kernel_h - 1) + 1, span_w = o.dilation * (s.kernel_w - 1) + 1;
  int64_t padded_h = s.in_h + 2 * o.padding, padded_w = s.in_w + 2 * o.padding;
  EMBER_CHECK(span_h <= padded_h && span_w <= padded_w, op, ": kernel ", s.kernel_h, "x", s.kernel_w,
              " (dilated ", span_h, "x", span_w, ") is larger than the padded input ", padded_h, "x",
              padded_w, " (input ", input.sizes(), ", padding ", o.padding, ")");
  return s;
}

#ifdef EMBER_WITH_CUDA
// A device buffer of `bytes` for a kernel's workspace (the caching allocator makes it cheap).
Tensor cuda_workspace(size_t bytes, Device device) {
  return empty({static_cast<int64_t>(bytes)}, {.dtype = kUInt8, .device = device});
}

// y = conv(x, w) + b on CUDA; x, w, b contiguous, y allocated.
void conv2d_forward_cuda(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y,
                         const Conv2dShape& s) {
  const int device = x.device().index();
  cuda::DeviceGuard guard(device);
  cuda::Stream stream = cuda::current_stream(device);
  visit_floating(x.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pb = b.defined() ? b.data<T>() : nullptr;
    if (backend() == Backend::Vendor) {
      size_t bytes = kernels::vendor::conv2d_forward_workspace<T>(s, stream);
      Tensor ws = cuda_workspace(bytes, x.device());
      kernels::vendor::conv2d_forward<T>(x.data<T>(), w.data<T>(), pb, y.data<T>(), s, ws.data_ptr(), bytes,
                                         stream);
    } else {
      kernels::cuda::conv2d_forward<T>(x.data<T>(), w.data<T>(), pb, y.data<T>(), s, stream);
    }
  });
}

// dx (when need_x) and dw, db (when need_wb; db only when has_bias) on CUDA.
void conv2d_backward_cuda(const Tensor& dy, const Tensor& xs, const Tensor& ws, const Conv2dShape& s,
                          bool need_x, bool need_wb, bool has_bias, Tensor& dx, Tensor& dw, Tensor& db) {
  const int device = xs.device().index();
  cuda::DeviceGuard guard(device);
  cuda::Stream stream = cuda::current_stream(device);
  const TensorOptions options{.dtype = xs.dtype(), .device = xs.device()};
  const bool vendor = backend() == Backend::Vendor;
  visit_floating(xs.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (need_x) {
      dx = empty(xs.sizes(), options);
      if (vendor) {
        size_t bytes = kernels::vendor::conv2d_backward_input_workspace<T>(s, stream);
        Tensor space = cuda_workspace(bytes, xs.device());
        kernels::vendor::conv2d_backward_input<T>(dy.data<T>(), ws.data<T>(), dx.data<T>(), s, space.data_ptr(),
                                                  bytes, stream);
      } else {
        kernels::cuda::conv2d_backward_input<T>(dy.data<T>(), ws.data<T>(), dx.data<T>(), s, stream);
      }
    }
    if (need_wb) {
      dw = empty(ws.sizes(), options);
      if (has_bias) db = empty({s.out_channels}, options);
      T* pdb = has_bias ? db.data<T>() : nullptr;
      if (vendor) {
        size_t bytes = kernels::vendor::conv2d_backward_weight_workspace<T>(s, stream);
        Tensor space = cuda_workspace(bytes, xs.device());
        kernels::vendor::conv2d_backward_weight<T>(dy.data<T>(), xs.data<T>(), dw.data<T>(), pdb, s,
                                                   space.data_ptr(), bytes, stream);
      } else {
        int64_t elements = kernels::cuda::conv2d_backward_weight_workspace(s);
        Tensor space = elements > 0 ? empty({elements}, options) : Tensor();
        kernels::cuda::conv2d_backward_weight<T>(dy.data<T>(), xs.data<T>(), dw.data<T>(), pdb, s,
                                                 elements > 0 ? space.data<T>() : nullptr, stream);
      }
    }
  });
}
#endif

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Conv2dOptions options) {
  Conv2dShape s = conv_shape(input, weight, options);
  if (bias.defined()) {
    detail::check_same(input, bias, "conv2d", "input", "bias");
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == s.out_channels, "conv2d: bias must be [",
                s.out_channels, "] to match weight ", weight.sizes(), ", got ", bias.sizes());
  }
  Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = empty({s.batch, s.out_channels, s.out_h(), s.out_w()},
                     {.dtype = x.dtype(), .device = x.device()});
  if (x.is_cuda()) {
#ifdef EMBER_WITH_CUDA
    conv2d_forward_cuda(x, w, b, out, s);
#else
    detail::cuda_not_built("conv2d");
#endif
  } else {
    visit_floating(x.dtype(), "conv2d", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cpu::conv2d_forward<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr,
                                      out.data<T>(), s,
                                      detail::workspace<T>(kernels::cpu::conv2d_forward_workspace(s)));
    });
  }
  if (autograd::needs_grad({input, weight, bias})) {
    SavedTensor saved_x(x), saved_w(w);
    bool need_x = input.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad(), has_bias = bias.defined();
    autograd::record("conv2d", {input, weight, bias}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("conv2d"), ws = saved_w.unpack("conv2d");
      Tensor dy = g[0].contiguous();
      Tensor dx, dw, db;
      if (xs.is_cuda()) {
#ifdef EMBER_WITH_CUDA
        conv2d_backward_cuda(dy, xs, ws, s, need_x, need_w || need_b, has_bias, dx, dw, db);
#else
        detail::cuda_not_built("conv2d");
#endif
        return std::vector<Tensor>{dx, need_w ? dw : Tensor(), need_b ? db : Tensor()};
      }
      visit_floating(xs.dtype(), "conv2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (need_x) {
          dx = empty(xs.sizes(), {.dtype = xs.dtype()});
          kernels::cpu::conv2d_backward_input<T>(
              dy.data<T>(), ws.data<T>(), dx.data<T>(), s,
              detail::workspace<T>(kernels::cpu::conv2d_backward_input_workspace(s)));
        }
        if (need_w || need_b) {
          dw = empty(ws.sizes(), {.dtype = ws.dtype()});
          if (has_bias) db = empty({s.out_channels}, {.dtype = ws.dtype()});
          kernels::cpu::conv2d_backward_weight<T>(
              dy.data<T>(), xs.data<T>(), dw.data<T>(), has_bias ? db.data<T>() : nullptr, s,
              detail::workspace<T>(kernels::cpu::conv2d_backward_weight_workspace(s)));
        }
      });
      return std::vector<Tensor>{dx, need_w ? dw : Tensor(), need_b ? db : Tensor()};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
