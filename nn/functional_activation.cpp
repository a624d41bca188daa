// relu, dropout and flatten: checks, dispatch to kernels/cpu, backward nodes.
#include "core/autograd.h"
#include "core/generator.h"
#include "core/ops.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/dropout.h"
#include "nn/functional.h"
#include "nn/functional_checks.h"
#ifdef EMBER_WITH_CUDA
#include "core/backend.h"
#include "core/cuda/stream.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/dropout.h"
#include "kernels/vendor/cudnn_activation.h"
#endif

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// y = relu(x) on x's device; x and y contiguous, same shape, dtype and device.
void run_relu_forward(const Tensor& x, const Tensor& y) {
  if (x.device().is_cpu()) {
    visit_floating(x.dtype(), "relu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cpu::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel());
    });
    return;
  }
#ifdef EMBER_WITH_CUDA
  const int device = x.device().index();
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  const bool vendor = backend() == Backend::Vendor;
  visit_floating(x.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (vendor) {
      kernels::vendor::cudnn_relu_forward<T>(x.data<T>(), y.data<T>(), x.numel(), device, stream);
    } else {
      kernels::cuda::relu_forward<T>(x.data<T>(), y.data<T>(), x.numel(), stream);
    }
  });
#else
  detail::cuda_not_built("relu");
#endif
}

// dx = relu'(y) * dy on y's device; all contiguous, same shape, dtype and device.
void run_relu_backward(const Tensor& dy, const Tensor& y, const Tensor& dx) {
  if (y.device().is_cpu()) {
    visit_floating(y.dtype(), "relu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cpu::relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel());
    });
    return;
  }
#ifdef EMBER_WITH_CUDA
  const int device = y.device().index();
  cuda::DeviceGuard guard(device);
  cudaStream_t stream = cuda::current_stream(device);
  const bool vendor = backend() == Backend::Vendor;
  visit_floating(y.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (vendor) {
      kernels::vendor::cudnn_relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel(), device, stream);
    } else {
      kernels::cuda::relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel(), stream);
    }
  });
#else
  detail::cuda_not_built("relu");
#endif
}

void run_dropout_forward(const Tensor& x, const Tensor& y, const Tensor& mask, double p, uint64_t seed,
                         uint64_t offset) {
  if (x.device().is_cpu()) {
    visit_floating(x.dtype(), "dropout", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cpu::dropout_forward<T>(x.data<T>(), y.data<T>(), mask.data<uint8_t>(), x.numel(), p, seed, offset);
    });
    return;
  }
#ifdef EMBER_WITH_CUDA
  cuda::DeviceGuard guard(x.device().index());
  cudaStream_t stream = cuda::current_stream(x.device().index());
  visit_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cuda::dropout_forward<T>(x.data<T>(), y.data<T>(), mask.data<uint8_t>(), x.numel(), p, seed, offset,
                                      stream);
  });
#else
  detail::cuda_not_built("dropout");
#endif
}

void run_dropout_backward(const Tensor& dy, const Tensor& mask, const Tensor& dx, double p) {
  if (dy.device().is_cpu()) {
    visit_floating(dy.dtype(), "dropout", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cpu::dropout_backward<T>(dy.data<T>(), mask.data<uint8_t>(), dx.data<T>(), dy.numel(), p);
    });
    return;
  }
#ifdef EMBER_WITH_CUDA
  cuda::DeviceGuard guard(dy.device().index());
  cudaStream_t stream = cuda::current_stream(dy.device().index());
  visit_floating(dy.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cuda::dropout_backward<T>(dy.data<T>(), mask.data<uint8_t>(), dx.data<T>(), dy.numel(), p, stream);
  });
#else
  detail::cuda_not_built("dropout");
#endif
}

}  // namespace

Tensor relu(const Tensor& input) {
  detail::check_defined(input, "relu", "input");
  detail::check_floating(input, "relu", "input");
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  run_relu_forward(x, out);
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record("relu", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("relu");
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(y.sizes(), {.dtype = y.dtype(), .device = y.device()});
      run_relu_backward(dy, y, dx);
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor flatten(const Tensor& input, int64_t start_dim, int64_t end_dim) {
  detail::check_defined(input, "flatten", "input");
  return input.flatten(start_dim, end_dim);
}

Tensor dropout(const Tensor& input, double p, bool training) {
  detail::check_defined(input, "dropout", "input");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout: probability must be in [0, 1], got ", p);
  if (!training || p == 0.0) return input;
  detail::check_floating(input, "dropout", "input");
  if (p == 1.0) return mul(input, 0.0);
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  Tensor mask = empty(x.sizes(), {.dtype = kUInt8, .device = x.device()});
  Generator& gen = default_generator();
  uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(x.numel()));
  run_dropout_forward(x, out, mask, p, seed, offset);
  if (autograd::needs_grad({input})) {
    autograd::record("dropout", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(dy.sizes(), {.dtype = dy.dtype(), .device = dy.device()});
      run_dropout_backward(dy, mask, dx, p);
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
