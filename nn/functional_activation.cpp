// relu, sigmoid, tanh, gelu, silu, leaky_relu, elu, hardswish, dropout, dropout2d and flatten: checks, one
// dispatch to kernels/ per direction, backward nodes.
#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/activation.h"
#include "ember/kernels/cpu/dropout.h"
#include "ember/kernels/cuda/activation.h"
#include "ember/kernels/cuda/dropout.h"
#include "ember/kernels/vendor/cudnn_activation.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

#include <cmath>
#include <string>

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// The activations of kernels/activation.h: one fused kernel each way. The backward reads the
// output (sigmoid, tanh) or the input (the others), as PyTorch's backward formulas do.
Tensor activation(kernels::Activation op, double param, const Tensor& input) {
  const char* name = kernels::activation_name(op);
  detail::check_defined(input, name, "input");
  detail::check_floating(input, name, "input");
  Tensor x = input.detach().contiguous();
  Tensor out = empty_like(x);
  KernelContext on(x);
  visit_floating(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::activation_forward<T>(op, param, x.data<T>(), out.data<T>(), x.numel());
    } else {
      kernels::cuda::activation_forward<T>(op, param, x.data<T>(), out.data<T>(), x.numel(), on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved(kernels::backward_reads_output(op) ? out : input);
    autograd::record(name, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor s = saved.unpack(name).detach().contiguous();
      Tensor dy = g[0].contiguous();
      Tensor dx = empty_like(s);
      KernelContext on(s, backend);
      visit_floating(s.dtype(), name, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::activation_backward<T>(op, param, dy.data<T>(), s.data<T>(), dx.data<T>(), s.numel());
        } else {
          kernels::cuda::activation_backward<T>(op, param, dy.data<T>(), s.data<T>(), dx.data<T>(), s.numel(),
                                                on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace

Tensor sigmoid(const Tensor& input) { return activation(kernels::Activation::Sigmoid, 0.0, input); }

Tensor tanh(const Tensor& input) { return activation(kernels::Activation::Tanh, 0.0, input); }

Tensor gelu(const Tensor& input, const GELUOptions& options) {
  EMBER_CHECK(options.approximate == "none" || options.approximate == "tanh",
              "gelu: approximate must be \"none\" or \"tanh\", got \"", options.approximate, "\"");
  const bool tanh_form = options.approximate == "tanh";
  return activation(tanh_form ? kernels::Activation::GeluTanh : kernels::Activation::Gelu, 0.0, input);
}

Tensor silu(const Tensor& input) { return activation(kernels::Activation::Silu, 0.0, input); }

Tensor leaky_relu(const Tensor& input, double negative_slope) {
  EMBER_CHECK(std::isfinite(negative_slope), "leaky_relu: expected a finite negative_slope, got ", negative_slope);
  return activation(kernels::Activation::LeakyRelu, negative_slope, input);
}

Tensor elu(const Tensor& input, double alpha) {
  EMBER_CHECK(std::isfinite(alpha), "elu: expected a finite alpha, got ", alpha);
  return activation(kernels::Activation::Elu, alpha, input);
}

Tensor hardswish(const Tensor& input) { return activation(kernels::Activation::Hardswish, 0.0, input); }


Tensor relu(const Tensor& input) {
  detail::check_defined(input, "relu", "input");
  detail::check_floating(input, "relu", "input");
  Tensor x = input.detach().contiguous();
  Tensor out = empty_like(x);
  KernelContext on(x);
  visit_floating(x.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::relu_forward<T>(x.data<T>(), out.data<T>(), x.numel());
    } else if (on.vendor()) {
      kernels::vendor::cudnn_relu_forward<T>(x.data<T>(), out.data<T>(), x.numel(), on.device_index(), on.stream());
    } else {
      kernels::cuda::relu_forward<T>(x.data<T>(), out.data<T>(), x.numel(), on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record("relu", {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("relu");
      Tensor dy = g[0].contiguous();
      Tensor dx = empty_like(y);
      KernelContext on(y, backend);
      visit_floating(y.dtype(), "relu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel());
        } else if (on.vendor()) {
          kernels::vendor::cudnn_relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel(),
                                                  on.device_index(), on.stream());
        } else {
          kernels::cuda::relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel(), on.stream());
        }
      });
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
  Tensor out = empty_like(x);
  Tensor mask = empty(x.sizes(), {.dtype = kUInt8, .device = x.device()});
  Generator& gen = default_generator();
  uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(x.numel()));
  KernelContext on(x);
  visit_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::dropout_forward<T>(x.data<T>(), out.data<T>(), mask.data<uint8_t>(), x.numel(), p, seed, offset);
    } else {
      kernels::cuda::dropout_forward<T>(x.data<T>(), out.data<T>(), mask.data<uint8_t>(), x.numel(), p, seed,
                                        offset, on.stream());
    }
  });
  if (autograd::needs_grad({input})) {
    autograd::record("dropout", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty_like(dy);
      KernelContext on(dy);
      visit_floating(dy.dtype(), "dropout", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::dropout_backward<T>(dy.data<T>(), mask.data<uint8_t>(), dx.data<T>(), dy.numel(), p);
        } else {
          kernels::cuda::dropout_backward<T>(dy.data<T>(), mask.data<uint8_t>(), dx.data<T>(), dy.numel(), p,
                                             on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor dropout2d(const Tensor& input, double p, bool training) {
  detail::check_defined(input, "dropout2d", "input");
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout2d: probability must be in [0, 1], got ", p);
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4,
              "dropout2d: expected input [N, C, H, W] or [C, H, W], got ", input.dim(), "-D input ", input.sizes());
  if (!training || p == 0.0) return input;
  detail::check_floating(input, "dropout2d", "input");
  // One keep-or-drop draw per channel: dropout's kernels on a [N, C, 1, 1] tensor of ones give the
  // per-channel scale (0 or 1/(1-p)), which the multiply broadcasts over H and W.
  Shape channels = input.sizes();
  channels[channels.size() - 1] = channels[channels.size() - 2] = 1;
  Tensor scale = dropout(ones(channels, {.dtype = input.dtype(), .device = input.device()}), p, true);
  return mul(input, scale);
}

}  // namespace ember::nn::functional
