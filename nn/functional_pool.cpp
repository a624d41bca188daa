// max_pool2d: checks, one dispatch to kernels/ (CPU, the hand-written CUDA kernels or cuDNN) per
// direction, and its backward node. The hand-written kernels keep each window's argmax for the
// backward; cuDNN's backward finds the max again from the saved input and output.
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/kernels/cpu/pool.h"
#include "ember/kernels/cuda/pool.h"
#include "ember/kernels/vendor/cudnn_pool.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn {

void check_max_pool2d_options(const ExpandingArray<2>& kernel_size, const MaxPool2dOptions& o) {
  constexpr const char* op = "max_pool2d";
  const ExpandingArray<2> stride = o.stride.value_or(kernel_size);
  EMBER_CHECK(kernel_size[0] > 0 && kernel_size[1] > 0, op, ": kernel_size must be positive, got ",
              compact_str(kernel_size));
  EMBER_CHECK(stride[0] > 0 && stride[1] > 0, op, ": stride must be positive, got ", compact_str(stride));
  for (size_t i = 0; i < 2; ++i) {
    EMBER_CHECK(o.padding[i] >= 0 && 2 * o.padding[i] <= kernel_size[i], op,
                ": padding must be between 0 and half the kernel size ", compact_str(kernel_size), ", got ",
                compact_str(o.padding));
  }
  if (!o.dilation.all(1)) {
    throw NotImplemented(ember::detail::str(op, ": dilation=", compact_str(o.dilation),
                                            " is not supported yet (only dilation=1)"));
  }
}

namespace functional {

using autograd::SavedTensor;
using kernels::Pool2dShape;

Tensor max_pool2d(const Tensor& input, ExpandingArray<2> kernel_size, const MaxPool2dOptions& o) {
  constexpr const char* op = "max_pool2d";
  detail::check_defined(input, op, "input");
  EMBER_CHECK(input.dim() == 4, op, ": input must be 4-D [N, C, H, W], got ", input.sizes());
  detail::check_floating(input, op, "input");
  check_max_pool2d_options(kernel_size, o);
  const ExpandingArray<2> stride = o.stride.value_or(kernel_size);
  Pool2dShape s;
  s.batch = input.size(0);
  s.channels = input.size(1);
  s.in_h = input.size(2);
  s.in_w = input.size(3);
  s.kernel_h = kernel_size[0];
  s.kernel_w = kernel_size[1];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = o.padding[0];
  s.pad_w = o.padding[1];
  EMBER_CHECK(s.in_h + 2 * s.pad_h >= s.kernel_h && s.in_w + 2 * s.pad_w >= s.kernel_w, op, ": kernel ",
              s.kernel_h, "x", s.kernel_w, " is larger than the padded input ", s.in_h + 2 * s.pad_h, "x",
              s.in_w + 2 * s.pad_w, " (input ", input.sizes(), ")");
  Tensor x = input.detach().contiguous();
  Shape out_shape{s.batch, s.channels, s.out_h(), s.out_w()};
  Tensor out = empty(out_shape, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  Tensor argmax = on.vendor() ? Tensor() : empty(out_shape, {.dtype = kInt64, .device = x.device()});
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s);
    } else if (on.vendor()) {
      kernels::vendor::cudnn_max_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, on.device_index(), on.stream());
    } else {
      kernels::cuda::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s, on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    SavedTensor saved_x = on.vendor() ? SavedTensor(x) : SavedTensor();
    SavedTensor saved_out = on.vendor() ? SavedTensor(out) : SavedTensor();
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      KernelContext on(dy, backend);
      visit_floating(dy.dtype(), "max_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s);
        } else if (on.vendor()) {
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

}  // namespace functional
}  // namespace ember::nn
