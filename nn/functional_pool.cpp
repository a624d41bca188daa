// max_pool2d: checks, dispatch to kernels/cpu/pool, and its backward node (argmax routing).
#include "ember/core/autograd.h"
#include "ember/kernels/cpu/pool.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"
#ifdef EMBER_WITH_CUDA
#include "ember/core/backend.h"
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/pool.h"
#include "ember/kernels/vendor/cudnn_pool.h"
#endif

namespace ember::nn::functional {

using autograd::SavedTensor;

#ifdef EMBER_WITH_CUDA
namespace {

// The CUDA half of max_pool2d, after the checks: `x` is the contiguous input, `out` its
// allocated output. The backend is chosen once, at forward time: the hand-written kernels keep
// the argmax for the backward, cuDNN's backward finds the max again from the saved x and y.
Tensor max_pool2d_cuda(const Tensor& input, const Tensor& x, Tensor out, const kernels::cpu::Pool2dShape& s) {
  constexpr const char* op = "max_pool2d";
  const int device = x.device().index();
  cuda::DeviceGuard guard(device);
  cuda::Stream stream = cuda::current_stream(device);
  const bool vendor = backend() == Backend::Vendor;
  Tensor argmax;
  if (vendor) {
    visit_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::vendor::cudnn_max_pool2d_forward<T>(x.data<T>(), out.data<T>(), s, device, stream);
    });
  } else {
    argmax = empty(out.sizes(), {.dtype = kInt64, .device = x.device()});
    visit_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cuda::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s, stream);
    });
  }
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    SavedTensor saved_x = vendor ? SavedTensor(x) : SavedTensor();
    SavedTensor saved_out = vendor ? SavedTensor(out) : SavedTensor();
    autograd::record(op, {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype(), .device = dy.device()});
      const int dev = dy.device().index();
      cuda::DeviceGuard guard(dev);
      cuda::Stream stream = cuda::current_stream(dev);
      if (vendor) {
        Tensor xs = saved_x.unpack("max_pool2d"), ys = saved_out.unpack("max_pool2d");
        visit_floating(dy.dtype(), "max_pool2d", [&](auto tag) {
          using T = typename decltype(tag)::type;
          kernels::vendor::cudnn_max_pool2d_backward<T>(xs.data<T>(), ys.data<T>(), dy.data<T>(), dx.data<T>(), s,
                                                        dev, stream);
        });
      } else {
        visit_floating(dy.dtype(), "max_pool2d", [&](auto tag) {
          using T = typename decltype(tag)::type;
          kernels::cuda::max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s, stream);
        });
      }
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace
#endif

Tensor max_pool2d(const Tensor& input, int64_t kernel_size) {
  return max_pool2d(input, MaxPool2dOptions{.kernel_size = kernel_size});
}

Tensor max_pool2d(const Tensor& input, MaxPool2dOptions o) {
  constexpr const char* op = "max_pool2d";
  detail::check_defined(input, op, "input");
  EMBER_CHECK(input.dim() == 4, op, ": input must be 4-D [N, C, H, W], got ", input.sizes());
  detail::check_floating(input, op, "input");
  int64_t stride = o.stride == 0 ? o.kernel_size : o.stride;
  EMBER_CHECK(o.kernel_size > 0, op, ": kernel_size must be positive, got ", o.kernel_size);
  EMBER_CHECK(stride > 0, op, ": stride must be positive, got ", stride);
  EMBER_CHECK(o.padding >= 0 && 2 * o.padding <= o.kernel_size, op,
              ": padding must be between 0 and half the kernel size ", o.kernel_size, ", got ", o.padding);
  kernels::cpu::Pool2dShape s;
  s.batch = input.size(0);
  s.channels = input.size(1);
  s.in_h = input.size(2);
  s.in_w = input.size(3);
  s.kernel_h = s.kernel_w = o.kernel_size;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = o.padding;
  EMBER_CHECK(s.in_h + 2 * o.padding >= o.kernel_size && s.in_w + 2 * o.padding >= o.kernel_size, op,
              ": kernel ", o.kernel_size, "x", o.kernel_size, " is larger than the padded input ",
              s.in_h + 2 * o.padding, "x", s.in_w + 2 * o.padding, " (input ", input.sizes(), ")");
  Tensor x = input.detach().contiguous();
  Shape out_shape{s.batch, s.channels, s.out_h(), s.out_w()};
  Tensor out = empty(out_shape, {.dtype = x.dtype(), .device = x.device()});
  if (!x.device().is_cpu()) {
#ifdef EMBER_WITH_CUDA
    return max_pool2d_cuda(input, x, out, s);
#else
    detail::cuda_not_built(op);
#endif
  }
  Tensor argmax = empty(out_shape, {.dtype = kInt64});
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::max_pool2d_forward<T>(x.data<T>(), out.data<T>(), argmax.data<int64_t>(), s);
  });
  if (autograd::needs_grad({input})) {
    Shape in_shape = input.sizes();
    autograd::record(op, {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(in_shape, {.dtype = dy.dtype()});
      visit_floating(dy.dtype(), "max_pool2d", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::max_pool2d_backward<T>(dy.data<T>(), argmax.data<int64_t>(), dx.data<T>(), s);
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
