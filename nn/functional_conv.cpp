// conv2d: checks, one dispatch to kernels/ (CPU, the hand-written CUDA kernels or cuDNN) per
// direction, and its backward node.
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/nn/conv_dispatch.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn {

void check_conv2d_options(const Conv2dOptions& o) {
  functional::detail::check_conv_geometry("conv2d", o.stride, o.padding, o.dilation, o.groups);
}

namespace functional {

using autograd::SavedTensor;
using kernels::Conv2dShape;

namespace {

Conv2dShape conv_shape(const Tensor& input, const Tensor& weight, const Conv2dOptions& o) {
  constexpr const char* op = "conv2d";
  detail::check_conv_operands(op, input, weight, "[out_channels, in_channels, kH, kW]");
  check_conv2d_options(o);
  const int64_t g = o.groups;
  EMBER_CHECK(input.size(1) % g == 0, op, ": in_channels (", input.size(1), ") must be divisible by groups (",
              g, ")");
  EMBER_CHECK(weight.size(0) % g == 0, op, ": out_channels (", weight.size(0),
              ") must be divisible by groups (", g, ")");
  if (g == 1) {
    EMBER_CHECK(input.size(1) == weight.size(1), op, ": input has ", input.size(1),
                " channels but weight ", weight.sizes(), " expects ", weight.size(1));
  } else {
    EMBER_CHECK(input.size(1) / g == weight.size(1), op, ": weight ", weight.sizes(),
                " must have in_channels / groups = ", input.size(1), " / ", g, " = ", input.size(1) / g,
                " in dim 1, got ", weight.size(1));
  }
  Conv2dShape s;
  s.batch = input.size(0);
  s.in_channels = input.size(1);
  s.in_h = input.size(2);
  s.in_w = input.size(3);
  s.out_channels = weight.size(0);
  s.kernel_h = weight.size(2);
  s.kernel_w = weight.size(3);
  detail::set_conv_geometry(s, o.stride, o.padding, o.dilation, g);
  int64_t span_h = s.dilation_h * (s.kernel_h - 1) + 1, span_w = s.dilation_w * (s.kernel_w - 1) + 1;
  int64_t padded_h = s.in_h + 2 * s.pad_h, padded_w = s.in_w + 2 * s.pad_w;
  EMBER_CHECK(span_h <= padded_h && span_w <= padded_w, op, ": kernel ", s.kernel_h, "x", s.kernel_w,
              " (dilated ", span_h, "x", span_w, ") is larger than the padded input ", padded_h, "x",
              padded_w, " (input ", input.sizes(), ", padding ", compact_str(o.padding), ")");
  return s;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options) {
  Conv2dShape s = conv_shape(input, weight, options);
  if (bias.defined()) {
    detail::check_same(input, bias, "conv2d", "input", "bias");
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == s.out_channels, "conv2d: bias must be [",
                s.out_channels, "] to match weight ", weight.sizes(), ", got ", bias.sizes());
  }
  Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = empty({s.batch, s.out_channels, s.out_h(), s.out_w()}, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::conv_forward<T>(on, x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, out.data<T>(), s);
  });
  if (autograd::needs_grad({input, weight, bias})) {
    SavedTensor saved_x(x), saved_w(w);
    bool need_x = input.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad(), has_bias = bias.defined();
    autograd::record("conv2d", {input, weight, bias}, {&out},
                     [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("conv2d"), ws = saved_w.unpack("conv2d");
      Tensor dy = g[0].contiguous();
      const TensorOptions like{.dtype = xs.dtype(), .device = xs.device()};
      Tensor dx = need_x ? empty(xs.sizes(), like) : Tensor();
      Tensor dw = need_w || need_b ? empty(ws.sizes(), like) : Tensor();
      Tensor db = (need_w || need_b) && has_bias ? empty({s.out_channels}, like) : Tensor();
      KernelContext on(dy, backend);
      visit_floating(xs.dtype(), "conv2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (dx.defined()) detail::conv_backward_input<T>(on, dy.data<T>(), ws.data<T>(), dx.data<T>(), s);
        if (dw.defined()) {
          T* pdb = db.defined() ? db.data<T>() : nullptr;
          detail::conv_backward_weight<T>(on, dy.data<T>(), xs.data<T>(), dw.data<T>(), pdb, s);
        }
      });
      return std::vector<Tensor>{dx, need_w ? dw : Tensor(), need_b ? db : Tensor()};
    });
  }
  return out;
}

}  // namespace functional
}  // namespace ember::nn
