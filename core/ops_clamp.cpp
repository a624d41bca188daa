// clamp, clamp_min and clamp_max with scalar bounds: one strided kernel pass each way (forward, and
// a backward that passes the gradient inside [min, max]), on the CPU and on CUDA.
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

Tensor clamp_min(const Tensor& a, double min) { return clamp(a, min, std::nullopt); }
Tensor clamp_max(const Tensor& a, double max) { return clamp(a, std::nullopt, max); }

Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const {
  return ember::clamp(*this, min, max);
}

}  // namespace ember
