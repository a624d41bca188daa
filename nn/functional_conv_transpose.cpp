// conv_transpose2d: conv2d's kernels run mirrored. A transposed convolution of x with w is the
// input gradient of the convolution that maps its output back to x (the mirror below, with the
// same weight, stride, padding, dilation and groups), so
//   forward          = mirror's backward_input(dy := x),
//   input gradient   = mirror's forward(x := dy),
//   weight gradient  = mirror's backward_weight(dy := x, x := dy);
// the bias is added by an ordinary broadcast add.
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/nn/conv_dispatch.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn {

void check_conv_transpose2d_options(const ConvTranspose2dOptions& o) {
  constexpr const char* op = "conv_transpose2d";
  functional::detail::check_conv_geometry(op, o.stride, o.padding, o.dilation, o.groups);
  for (int i = 0; i < 2; ++i) {
    EMBER_CHECK(o.output_padding[i] >= 0 &&
                    (o.output_padding[i] < o.stride[i] || o.output_padding[i] < o.dilation[i]),
                op, ": output_padding must be non-negative and smaller than either stride or dilation, got "
                "output_padding=", compact_str(o.output_padding), ", stride=", compact_str(o.stride),
                ", dilation=", compact_str(o.dilation));
  }
}

namespace functional {

using autograd::SavedTensor;
using kernels::Conv2dShape;

namespace {

struct TransposedGeometry {
  Conv2dShape mirror;      // the convolution from the output [N, C_out, out_h, out_w] back to the input
  int64_t in_h, in_w;      // the input's own size
  int64_t out_h, out_w;
};

TransposedGeometry transposed_geometry(const Tensor& input, const Tensor& weight, const ConvTranspose2dOptions& o) {
  constexpr const char* op = "conv_transpose2d";
  detail::check_conv_operands(op, input, weight, "[in_channels, out_channels / groups, kH, kW]");
  check_conv_transpose2d_options(o);
  const int64_t g = o.groups;
  EMBER_CHECK(input.size(1) == weight.size(0), op, ": input has ", input.size(1), " channels but weight ",
              weight.sizes(), " expects ", weight.size(0), " (weight is [in_channels, out_channels / groups, kH, kW])");
  EMBER_CHECK(input.size(1) % g == 0, op, ": in_channels (", input.size(1), ") must be divisible by groups (", g,
              ")");
  TransposedGeometry t;
  t.in_h = input.size(2);
  t.in_w = input.size(3);
  const int64_t kh = weight.size(2), kw = weight.size(3);
  t.out_h = (t.in_h - 1) * o.stride[0] - 2 * o.padding[0] + o.dilation[0] * (kh - 1) + o.output_padding[0] + 1;
  t.out_w = (t.in_w - 1) * o.stride[1] - 2 * o.padding[1] + o.dilation[1] * (kw - 1) + o.output_padding[1] + 1;
  EMBER_CHECK(t.out_h >= 1 && t.out_w >= 1, op, ": the output would be ", t.out_h, "x", t.out_w, " for input ",
              input.sizes(), ", kernel ", kh, "x", kw, ", stride ", compact_str(o.stride), ", padding ",
              compact_str(o.padding));
  Conv2dShape& s = t.mirror;
  s.batch = input.size(0);
  s.in_channels = weight.size(1) * g;
  s.in_h = t.out_h;
  s.in_w = t.out_w;
  s.out_channels = input.size(1);
  s.kernel_h = kh;
  s.kernel_w = kw;
  detail::set_conv_geometry(s, o.stride, o.padding, o.dilation, g);
  // The mirror maps the output to at least the input's size; an output_padding >= stride (allowed
  // when smaller than the dilation) makes it larger: the input is then read with zero rows or
  // columns at its end, which add nothing.
  return t;
}

// x [N, C, h, w] as [N, C, rows, cols] (rows >= h, cols >= w), zeros after its end.
Tensor zero_extended(const Tensor& x, int64_t rows, int64_t cols) {
  if (rows == x.size(2) && cols == x.size(3)) return x;
  Tensor out = zeros({x.size(0), x.size(1), rows, cols}, {.dtype = x.dtype(), .device = x.device()});
  out.narrow(2, 0, x.size(2)).narrow(3, 0, x.size(3)).copy_(x);
  return out;
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options) {
  const TransposedGeometry t = transposed_geometry(input, weight, options);
  const Conv2dShape& s = t.mirror;
  if (bias.defined()) {
    detail::check_same(input, bias, "conv_transpose2d", "input", "bias");
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == s.in_channels, "conv_transpose2d: bias must be [", s.in_channels,
                "] to match weight ", weight.sizes(), " and groups ", options.groups, ", got ", bias.sizes());
  }
  Tensor x = zero_extended(input.detach().contiguous(), s.out_h(), s.out_w());
  Tensor w = weight.detach().contiguous();
  Tensor out = empty({s.batch, s.in_channels, t.out_h, t.out_w}, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), "conv_transpose2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    detail::conv_backward_input<T>(on, x.data<T>(), w.data<T>(), out.data<T>(), s);
  });
  if (autograd::needs_grad({input, weight})) {
    SavedTensor saved_x(x), saved_w(w);
    const bool need_x = input.requires_grad(), need_w = weight.requires_grad();
    const int64_t in_h = t.in_h, in_w = t.in_w;
    autograd::record("conv_transpose2d", {input, weight}, {&out},
                     [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("conv_transpose2d"), ws = saved_w.unpack("conv_transpose2d");
      Tensor dy = g[0].contiguous();
      const TensorOptions like{.dtype = xs.dtype(), .device = xs.device()};
      Tensor dx = need_x ? empty(xs.sizes(), like) : Tensor();
      Tensor dw = need_w ? empty(ws.sizes(), like) : Tensor();
      KernelContext on(dy, backend);
      visit_floating(xs.dtype(), "conv_transpose2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (need_x) detail::conv_forward<T>(on, dy.data<T>(), ws.data<T>(), nullptr, dx.data<T>(), s);
        if (need_w) detail::conv_backward_weight<T>(on, xs.data<T>(), dy.data<T>(), dw.data<T>(), nullptr, s);
      });
      // The rows and columns the input was extended by get no gradient of their own.
      if (need_x && (dx.size(2) != in_h || dx.size(3) != in_w)) {
        dx = dx.narrow(2, 0, in_h).narrow(3, 0, in_w).contiguous();
      }
      return std::vector<Tensor>{dx, dw};
    });
  }
  return bias.defined() ? add(out, bias.reshape({1, -1, 1, 1})) : out;
}

}  // namespace functional
}  // namespace ember::nn
