// The CPU-vs-CUDA parity check, in the manner of ggml's test-backend-ops: one table row per op,
// each run on fresh random inputs on the CPU and on CUDA (hand-written and vendor backends),
// forward outputs and every input gradient compared.
// defines: ParityCase, check_parity, random_input, kFloatingDTypes, dtype_suffix, tolerance_for
//
// CUDA allocations are poisoned (NaN-filled) while a case runs, so an output element a kernel
// forgets to write shows up as NaN and fails the comparison.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/backend.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

namespace parity {

using ember::Shape;
using ember::Tensor;

struct ParityCase {
  std::string name;
  // Builds the CPU inputs; floating inputs listed in `differentiable` get gradients checked.
  std::function<std::vector<Tensor>()> make_inputs;
  std::function<Tensor(const std::vector<Tensor>&)> op;
  std::vector<size_t> differentiable;  // indices into the inputs
  double tolerance = 1e-4;             // relative error, max-norm
  bool vendor_too = false;             // the op has a vendor (cuBLAS / cuDNN) path
};

// The floating dtypes every network op runs in, a suffix naming each in a case name, and the
// relative error each is held to.
inline const ember::DType kFloatingDTypes[] = {ember::kFloat32, ember::kFloat64};
inline std::string dtype_suffix(ember::DType dtype) { return dtype == ember::kFloat32 ? " f32" : " f64"; }
inline double tolerance_for(ember::DType dtype) { return dtype == ember::kFloat32 ? 1e-4 : 1e-10; }

// Uniform in [-1, 1) away from zero: |x| >= 0.05, so relu / max ties and divisions are benign.
inline Tensor random_input(const Shape& shape, ember::DType dtype = ember::kFloat32) {
  Tensor u = ember::randn(shape, {.dtype = dtype});
  Tensor sign = ember::where(ember::ge(u, 0.0), ember::ones(shape, {.dtype = dtype}),
                             ember::full(shape, -1.0, {.dtype = dtype}));
  return ember::add(u, ember::mul(sign, 0.05));
}

// max |actual - expected| / max(max |expected|, 1e-6); NaN anywhere gives infinity.
inline double relative_error(const Tensor& actual, const Tensor& expected) {
  Tensor a = actual.detach().cpu().to(ember::kFloat64).contiguous();
  Tensor e = expected.detach().cpu().to(ember::kFloat64).contiguous();
  if (a.sizes() != e.sizes()) return INFINITY;
  const double* pa = a.data<double>();
  const double* pe = e.data<double>();
  double worst = 0, scale = 1e-6;
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (!std::isfinite(pa[i]) && std::isfinite(pe[i])) return INFINITY;
    worst = std::max(worst, std::abs(pa[i] - pe[i]));
    scale = std::max(scale, std::abs(pe[i]));
  }
  return worst / scale;
}

struct Result {
  Tensor output;
  std::vector<Tensor> grads;
};

inline Result run(const ParityCase& c, const std::vector<Tensor>& cpu_inputs, ember::Device device,
                  const Tensor& grad_output_cpu) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < cpu_inputs.size(); ++i) {
    Tensor t = cpu_inputs[i].detach().to(device);
    if (std::find(c.differentiable.begin(), c.differentiable.end(), i) != c.differentiable.end()) {
      t.requires_grad_(true);
    }
    inputs.push_back(t);
  }
  Result r;
  r.output = c.op(inputs);
  if (!c.differentiable.empty() && r.output.requires_grad()) {
    r.output.backward(grad_output_cpu.to(device));
  }
  for (size_t i : c.differentiable) r.grads.push_back(inputs[i].grad());
  if (device.is_cuda()) ember::cuda::synchronize(device.index());
  return r;
}

// The CUDA backends a parity check runs: hand-written always, the vendor libraries too when asked
// for, except on ember's emulated GPUs (EMBER_CUDA=EMULATED), which do not emulate cuBLAS and
// cuDNN: there the hand-written kernels alone are compared with the CPU.
inline std::vector<ember::Backend> backends_under_test(bool vendor_too) {
  std::vector<ember::Backend> backends{ember::Backend::Handwritten};
#if !defined(EMBER_CUDA_EMULATOR)
  if (vendor_too) backends.push_back(ember::Backend::Vendor);
#endif
  return backends;
}

inline void check_parity(const ParityCase& c) {
  ember::manual_seed(std::hash<std::string>{}(c.name));
  std::vector<Tensor> inputs = c.make_inputs();
  Tensor probe = [&] {
    ember::NoGradGuard no_grad;
    return c.op(inputs);
  }();
  Tensor grad_output = random_input(probe.sizes(), probe.dtype());
  Result expected = run(c, inputs, ember::Device::cpu(), grad_output);

  for (ember::Backend backend : backends_under_test(c.vendor_too)) {
    ember::BackendGuard use(backend);
    ember::cuda::set_poison_allocations(true);
    Result actual = run(c, inputs, ember::Device::cuda(0), grad_output);
    ember::cuda::set_poison_allocations(false);
    INFO(c.name << " [" << ember::backend_name(backend) << "]");
    CHECK(actual.output.device() == ember::Device::cuda(0));
    double forward_error = relative_error(actual.output, expected.output);
    INFO("forward relative error " << forward_error);
    CHECK(forward_error < c.tolerance);
    for (size_t k = 0; k < c.differentiable.size(); ++k) {
      INFO("gradient of input " << c.differentiable[k]);
      REQUIRE(actual.grads[k].defined() == expected.grads[k].defined());
      if (!expected.grads[k].defined()) continue;
      CHECK(actual.grads[k].device() == ember::Device::cuda(0));
      double grad_error = relative_error(actual.grads[k], expected.grads[k]);
      INFO("relative error " << grad_error);
      CHECK(grad_error < c.tolerance);
    }
  }
}

}  // namespace parity
