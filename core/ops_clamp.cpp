// clamp, clamp_min and clamp_max with scalar bounds: one strided kernel pass each way (forward, and
// a backward that passes the gradient inside [min, max]), on the CPU and on CUDA; clamp with
// tensor bounds composed of maximum, minimum and where, with PyTorch's gradient rules.
#include <cmath>
#include <optional>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cuda/elementwise.h"

namespace ember {

using autograd::SavedTensor;

namespace {

bool is_whole(std::optional<double> v) { return !v || *v == std::floor(*v); }

// The gradient of clamp: grad where the saved input lies in [min, max], zero elsewhere.
Tensor clamp_backward(const Tensor& grad, const Tensor& input, const kernels::ClampBounds<double>& bounds) {
  Tensor g = grad.to(input.dtype()).expand(input.sizes());
  Tensor out = empty(input.sizes(), {.dtype = input.dtype(), .device = input.device()});
  kernels::StridedLoop<3> loop{input.sizes(), {out.strides(), g.strides(), input.strides()}};
  KernelContext on(out);
  const int dtype = static_cast<int>(input.dtype());
  if (on.cpu()) {
    kernels::cpu::clamp_backward(dtype, out.data_ptr(), g.data_ptr(), input.data_ptr(), loop, bounds);
  } else {
    kernels::cuda::clamp_backward(dtype, out.data_ptr(), g.data_ptr(), input.data_ptr(), loop, bounds, on.stream());
  }
  return out;
}

}  // namespace

Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max) {
  EMBER_CHECK(a.defined(), "clamp: called on an undefined tensor");
  EMBER_CHECK(min || max, "clamp: at least one of 'min' or 'max' must be given, got neither");
  EMBER_CHECK(a.dtype() != kBool, "clamp: bool tensors cannot be clamped, got a bool tensor of shape ", a.sizes());
  // As PyTorch's type promotion with a Python scalar: an integer tensor clamped to a fractional
  // bound computes in float32.
  const DType compute = !is_floating(a.dtype()) && !(is_whole(min) && is_whole(max)) ? kFloat32 : a.dtype();
  const kernels::ClampBounds<double> bounds{min.value_or(0.0), max.value_or(0.0), min.has_value(), max.has_value()};
  Tensor x = a.dtype() == compute ? a.detach() : a.detach().to(compute);
  Tensor out = empty(a.sizes(), {.dtype = compute, .device = a.device()});
  kernels::StridedLoop<2> loop{a.sizes(), {out.strides(), x.strides()}};
  KernelContext on(out);
  if (on.cpu()) kernels::cpu::clamp(static_cast<int>(compute), out.data_ptr(), x.data_ptr(), loop, bounds);
  else kernels::cuda::clamp(static_cast<int>(compute), out.data_ptr(), x.data_ptr(), loop, bounds, on.stream());
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    const DType input_dtype = a.dtype();
    autograd::record("clamp", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{clamp_backward(g[0], saved_a.unpack("clamp"), bounds).to(input_dtype)};
    });
  }
  return out;
}

Tensor clamp(const Tensor& a, const Tensor& min, const Tensor& max) {
  EMBER_CHECK(a.defined(), "clamp: called on an undefined tensor");
  EMBER_CHECK(min.defined() || max.defined(), "clamp: at least one of 'min' or 'max' must be given, got neither");
  EMBER_CHECK(a.dtype() != kBool, "clamp: bool tensors cannot be clamped, got a bool tensor of shape ", a.sizes());
  Tensor x = a.detach(), lo = min.defined() ? min.detach() : Tensor(), hi = max.defined() ? max.detach() : Tensor();
  Tensor out = x;
  if (lo.defined()) out = maximum(out, lo);  // NaN in any operand stays NaN
  if (hi.defined()) out = minimum(out, hi);
  if (autograd::needs_grad({a, min, max})) {
    const Shape a_sizes = a.sizes(), lo_sizes = lo.defined() ? lo.sizes() : Shape{},
                hi_sizes = hi.defined() ? hi.sizes() : Shape{};
    const DType a_dtype = a.dtype(), lo_dtype = lo.defined() ? lo.dtype() : a.dtype(),
                hi_dtype = hi.defined() ? hi.dtype() : a.dtype();
    SavedTensor saved_x(x), saved_lo(lo), saved_hi(hi);
    autograd::record("clamp", {a, min, max}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("clamp");
      Tensor ls = saved_lo.defined() ? saved_lo.unpack("clamp") : Tensor();
      Tensor hs = saved_hi.defined() ? saved_hi.unpack("clamp") : Tensor();
      const Tensor zero = zeros({}, {.dtype = g[0].dtype(), .device = g[0].device()});
      const auto both = [](const Tensor& p, const Tensor& q) { return where(p, q, p); };
      const auto either = [](const Tensor& p, const Tensor& q) { return where(p, p, q); };
      const auto pass = [&](const Tensor& mask, const Shape& sizes, DType dtype) {
        return sum_to(where(mask, g[0], zero), sizes).to(dtype);
      };
      // PyTorch's rules (clamp_backward_min_max): the input where min <= a <= max; min where
      // a < min and min < max; max where a > max or max < min (then max is the result everywhere).
      Tensor in_range;
      if (ls.defined()) in_range = ge(xs, ls);
      if (hs.defined()) in_range = in_range.defined() ? both(in_range, le(xs, hs)) : le(xs, hs);
      Tensor dlo, dhi;
      if (ls.defined()) dlo = pass(hs.defined() ? both(lt(xs, ls), lt(ls, hs)) : lt(xs, ls), lo_sizes, lo_dtype);
      if (hs.defined()) dhi = pass(ls.defined() ? either(gt(xs, hs), lt(hs, ls)) : gt(xs, hs), hi_sizes, hi_dtype);
      return std::vector<Tensor>{pass(in_range, a_sizes, a_dtype), dlo, dhi};
    });
  }
  return out;
}

Tensor clamp_min(const Tensor& a, double min) { return clamp(a, min, std::nullopt); }
Tensor clamp_max(const Tensor& a, double max) { return clamp(a, std::nullopt, max); }

Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const {
  return ember::clamp(*this, min, max);
}

Tensor Tensor::clamp(const Tensor& min, const Tensor& max) const { return ember::clamp(*this, min, max); }

}  // namespace ember
