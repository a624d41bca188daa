// batch_norm: checks, one dispatch to kernels/ per direction (training or evaluation forward,
// one backward for both), the running statistics updated in place by the forward kernel.
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/batch_norm.h"
#include "ember/kernels/cpu/batch_norm.h"
#include "ember/kernels/cuda/batch_norm.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// A per-channel tensor ([C]) beside the input, when defined.
void check_channel_tensor(const Tensor& input, const Tensor& t, const char* what) {
  if (!t.defined()) return;
  detail::check_same(input, t, "batch_norm", "input", what);
  EMBER_CHECK(t.dim() == 1 && t.size(0) == input.size(1), "batch_norm: expected input with ", t.numel(),
              " channels to match ", what, " ", t.sizes(), ", got input ", input.sizes());
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum, double eps) {
  detail::check_defined(input, "batch_norm", "input");
  detail::check_floating(input, "batch_norm", "input");
  EMBER_CHECK(input.dim() >= 2, "batch_norm: expected input [N, C, *] with at least 2 dimensions, got ",
              input.dim(), "-D input ", input.sizes());
  EMBER_CHECK(running_mean.defined() == running_var.defined(),
              "batch_norm: running_mean and running_var must both be defined or both undefined, got ",
              running_mean.defined() ? "running_mean alone" : "running_var alone");
  check_channel_tensor(input, running_mean, "running_mean");
  check_channel_tensor(input, running_var, "running_var");
  check_channel_tensor(input, weight, "weight");
  check_channel_tensor(input, bias, "bias");
  const bool has_running = running_mean.defined();
  const kernels::BatchNormShape s{.batch = input.size(0), .channels = input.size(1),
                                  .spatial = input.dim() > 2 ? input.numel() / std::max<int64_t>(1, input.size(0) * input.size(1)) : 1};
  if (training) {
    EMBER_CHECK(s.per_channel() > 1, "batch_norm: Expected more than 1 value per channel when training, got input size ",
                input.sizes());
    EMBER_CHECK(!has_running || momentum.has_value(),
                "batch_norm: momentum=None (a cumulative average) needs the number of batches seen, which only "
                "nn::BatchNorm1d/2d keep; pass momentum = 1 / num_batches instead");
  } else {
    EMBER_CHECK(has_running, "batch_norm: running_mean and running_var are needed when not training, got undefined tensors");
  }
  if (has_running) {
    EMBER_CHECK(running_mean.is_contiguous() && running_var.is_contiguous(),
                "batch_norm: running_mean and running_var must be contiguous (they are updated in place)");
  }

  Tensor x = input.detach().contiguous();
  Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = empty_like(x);
  const bool record = autograd::needs_grad({input, weight, bias});
  const TensorOptions per_channel{.dtype = x.dtype(), .device = x.device()};
  // What the backward needs: the mean and invstd it normalised with.
  Tensor mean = training ? empty({s.channels}, per_channel) : Tensor();
  Tensor invstd = training || record ? empty({s.channels}, per_channel) : Tensor();
  KernelContext on(x);
  visit_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (training) {
      // The same handles, written in place (the version bump marks the write, as PyTorch's).
      Tensor rm_handle = running_mean, rv_handle = running_var;
      T* rm = has_running ? rm_handle.mutable_data<T>("batch_norm") : nullptr;
      T* rv = has_running ? rv_handle.mutable_data<T>("batch_norm") : nullptr;
      const double factor = momentum.value_or(0.0);
      if (on.cpu()) {
        kernels::cpu::batch_norm_forward_training<T>(x.data<T>(), data_or_null<T>(w), data_or_null<T>(b),
                                                     out.data<T>(), mean.data<T>(), invstd.data<T>(), rm, rv,
                                                     factor, eps, s);
      } else {
        kernels::cuda::batch_norm_forward_training<T>(x.data<T>(), data_or_null<T>(w), data_or_null<T>(b),
                                                      out.data<T>(), mean.data<T>(), invstd.data<T>(), rm, rv,
                                                      factor, eps, s, on.stream());
      }
    } else {
      T* save_invstd = invstd.defined() ? invstd.data<T>() : nullptr;
      if (on.cpu()) {
        kernels::cpu::batch_norm_forward_eval<T>(x.data<T>(), running_mean.data<T>(), running_var.data<T>(),
                                                 data_or_null<T>(w), data_or_null<T>(b), out.data<T>(),
                                                 save_invstd, eps, s);
      } else {
        kernels::cuda::batch_norm_forward_eval<T>(x.data<T>(), running_mean.data<T>(), running_var.data<T>(),
                                                  data_or_null<T>(w), data_or_null<T>(b), out.data<T>(),
                                                  save_invstd, eps, s, on.stream());
      }
    }
  });
  if (record) {
    // Evaluation normalised with the running mean: a copy, as later training steps update it.
    if (!training) mean = running_mean.detach().clone();
    SavedTensor saved_x(x), saved_w(w);
    const bool need_x = input.requires_grad();
    const bool need_w = weight.defined() && weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    autograd::record("batch_norm", {input, weight, bias}, {&out},
                     [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("batch_norm");
      Tensor ws = saved_w.defined() ? saved_w.unpack("batch_norm") : Tensor();
      Tensor dy = g[0].contiguous();
      const TensorOptions like{.dtype = xs.dtype(), .device = xs.device()};
      Tensor dx = need_x ? empty_like(xs) : Tensor();
      Tensor dw = need_w ? empty({s.channels}, like) : Tensor();
      Tensor db = need_b ? empty({s.channels}, like) : Tensor();
      KernelContext on(xs, backend);
      visit_floating(xs.dtype(), "batch_norm", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* pdx = need_x ? dx.data<T>() : nullptr;
        T* pdw = need_w ? dw.data<T>() : nullptr;
        T* pdb = need_b ? db.data<T>() : nullptr;
        if (on.cpu()) {
          kernels::cpu::batch_norm_backward<T>(dy.data<T>(), xs.data<T>(), mean.data<T>(), invstd.data<T>(),
                                               data_or_null<T>(ws), pdx, pdw, pdb, training, s);
        } else {
          kernels::cuda::batch_norm_backward<T>(dy.data<T>(), xs.data<T>(), mean.data<T>(), invstd.data<T>(),
                                                data_or_null<T>(ws), pdx, pdw, pdb, training, s, on.stream());
        }
      });
      return std::vector<Tensor>{dx, dw, db};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
