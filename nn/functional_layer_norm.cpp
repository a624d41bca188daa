// layer_norm: checks, one dispatch to kernels/ per direction; the per-row mean and invstd the
// forward computes are kept for the backward.
#include <algorithm>

#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/layer_norm.h"
#include "ember/kernels/cuda/layer_norm.h"
#include "ember/kernels/layer_norm.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// weight or bias, when defined: beside the input, of shape normalized_shape.
void check_parameter(const Tensor& input, const Tensor& t, const Shape& normalized_shape, const char* what) {
  if (!t.defined()) return;
  detail::check_same(input, t, "layer_norm", "input", what);
  EMBER_CHECK(t.sizes() == normalized_shape, "layer_norm: expected ", what, " of shape normalized_shape ",
              normalized_shape, ", got ", what, " of shape ", t.sizes());
}

// The input's trailing dims must be normalized_shape.
kernels::LayerNormShape layer_norm_shape(const Tensor& input, const Shape& normalized_shape) {
  EMBER_CHECK(!normalized_shape.empty(), "layer_norm: expected normalized_shape with at least one dim, got []");
  const int64_t d = static_cast<int64_t>(normalized_shape.size());
  const Shape& sizes = input.sizes();
  const bool trailing = input.dim() >= d && std::equal(normalized_shape.begin(), normalized_shape.end(),
                                                        sizes.end() - d);
  EMBER_CHECK(trailing, "layer_norm: expected input of shape [*, ", shape_str(normalized_shape).substr(1),
              " (normalized_shape ", normalized_shape, "), got input ", sizes);
  int64_t cols = 1;
  for (int64_t v : normalized_shape) cols *= v;
  return {.rows = cols == 0 ? 0 : input.numel() / cols, .cols = cols};
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  detail::check_defined(input, "layer_norm", "input");
  detail::check_floating(input, "layer_norm", "input");
  const kernels::LayerNormShape s = layer_norm_shape(input, normalized_shape);
  check_parameter(input, weight, normalized_shape, "weight");
  check_parameter(input, bias, normalized_shape, "bias");
  EMBER_CHECK(eps >= 0, "layer_norm: eps must be non-negative, got ", eps);

  Tensor x = input.detach().contiguous();
  // The kernels take weight and bias both or neither: a lone one gets its neutral partner.
  Tensor w = weight.defined() ? weight.detach().contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  if (w.defined() != b.defined()) {
    const TensorOptions like{.dtype = x.dtype(), .device = x.device()};
    if (!w.defined()) w = ones(normalized_shape, like);
    else b = zeros(normalized_shape, like);
  }
  Tensor out = empty_like(x);
  const TensorOptions per_row{.dtype = x.dtype(), .device = x.device()};
  Tensor mean = empty({s.rows}, per_row), invstd = empty({s.rows}, per_row);
  KernelContext on(x);
  visit_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::layer_norm_forward<T>(x.data<T>(), data_or_null<T>(w), data_or_null<T>(b), out.data<T>(),
                                          mean.data<T>(), invstd.data<T>(), eps, s);
    } else {
      kernels::cuda::layer_norm_forward<T>(x.data<T>(), data_or_null<T>(w), data_or_null<T>(b), out.data<T>(),
                                           mean.data<T>(), invstd.data<T>(), eps, s, on.stream());
    }
  });
  if (autograd::needs_grad({input, weight, bias})) {
    SavedTensor saved_x(x), saved_w(w);
    const bool need_x = input.requires_grad();
    const bool need_w = weight.defined() && weight.requires_grad();
    const bool need_b = bias.defined() && bias.requires_grad();
    autograd::record("layer_norm", {input, weight, bias}, {&out},
                     [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("layer_norm");
      Tensor ws = saved_w.defined() ? saved_w.unpack("layer_norm") : Tensor();
      Tensor dy = g[0].contiguous();
      const TensorOptions like{.dtype = xs.dtype(), .device = xs.device()};
      Tensor dx = need_x ? empty_like(xs) : Tensor();
      Tensor dw = need_w ? empty(normalized_shape, like) : Tensor();
      Tensor db = need_b ? empty(normalized_shape, like) : Tensor();
      KernelContext on(xs, backend);
      visit_floating(xs.dtype(), "layer_norm", [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* pdx = need_x ? dx.data<T>() : nullptr;
        T* pdw = need_w ? dw.data<T>() : nullptr;
        T* pdb = need_b ? db.data<T>() : nullptr;
        if (on.cpu()) {
          kernels::cpu::layer_norm_backward<T>(dy.data<T>(), xs.data<T>(), mean.data<T>(), invstd.data<T>(),
                                               data_or_null<T>(ws), pdx, pdw, pdb, s);
        } else {
          kernels::cuda::layer_norm_backward<T>(dy.data<T>(), xs.data<T>(), mean.data<T>(), invstd.data<T>(),
                                                data_or_null<T>(ws), pdx, pdw, pdb, s, on.stream());
        }
      });
      return std::vector<Tensor>{dx, dw, db};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
