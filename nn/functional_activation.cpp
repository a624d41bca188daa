// relu, dropout and flatten: checks, dispatch to kernels/cpu, backward nodes.
#include "core/autograd.h"
#include "core/generator.h"
#include "core/ops.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/dropout.h"
#include "nn/functional.h"
#include "nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

Tensor relu(const Tensor& input) {
  detail::check_defined(input, "relu", "input");
  detail::check_floating(input, "relu", "input");
  if (!input.device().is_cpu()) detail::cuda_not_ready("relu");
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype()});
  visit_floating(x.dtype(), "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::relu_forward<T>(x.data<T>(), out.data<T>(), x.numel());
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record("relu", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("relu");
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(y.sizes(), {.dtype = y.dtype()});
      visit_floating(y.dtype(), "relu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::relu_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), y.numel());
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
  if (!input.device().is_cpu()) detail::cuda_not_ready("dropout");
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype()});
  Tensor mask = empty(x.sizes(), {.dtype = kUInt8});
  Generator& gen = default_generator();
  uint64_t seed = gen.seed(), offset = gen.reserve(static_cast<uint64_t>(x.numel()));
  visit_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::dropout_forward<T>(x.data<T>(), out.data<T>(), mask.data<uint8_t>(), x.numel(), p,
                                     seed, offset);
  });
  if (autograd::needs_grad({input})) {
    autograd::record("dropout", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor dy = g[0].contiguous();
      Tensor dx = empty(dy.sizes(), {.dtype = dy.dtype()});
      visit_floating(dy.dtype(), "dropout", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::dropout_backward<T>(dy.data<T>(), mask.data<uint8_t>(), dx.data<T>(), dy.numel(), p);
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
