// The optimizers' update rules, one element at a time, shared by the CPU kernels
// (kernels/cpu/optimizer_step.h) and their multi-tensor CUDA twins (kernels/cuda/optimizer_step.h),
// so that both apply the very same arithmetic.
// defines: ember::kernels::OptimizerTensor, SgdRule, AdamRule, RmspropRule, AdagradRule
//
// Each rule is torch.optim's single-tensor update (PyTorch 1.13, optim/*.py) written out per
// element, in the order PyTorch's tensor ops round: `a.mul_(b).add_(c, alpha=k)` is a·b + k·c,
// `addcmul_(x, y, value=k)` is self + k·x·y and `addcdiv_(x, y, value=k)` is self + (k·x)/y.
// Coefficients are rounded to T first, as PyTorch casts a Python float to the tensor's type.
// Every operation rounds on its own: the CPU kernels are compiled with -ffp-contract=off, and on a
// GPU the rn:: helpers below are the intrinsics nvcc never fuses into an FMA.
#pragma once

#include <cmath>
#include <cstdint>

#include "ember/common/host_device.h"

namespace ember::kernels {

// One parameter of an update: `numel` contiguous elements of param, grad and the rule's state
// buffers (state[k] is the rule's k-th buffer; unused slots may be null).
template <class T>
struct OptimizerTensor {
  T* param = nullptr;
  const T* grad = nullptr;  // may not alias param
  T* state[3] = {nullptr, nullptr, nullptr};
  int64_t numel = 0;
  T coefficient[2] = {T(0), T(0)};  // per-parameter coefficients (from its step count): see each rule
  bool first_step = false;          // SGD: the momentum buffer is (re)initialised on this step
};

// Operations that round once each, on the host and on a device alike.
namespace rn {
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt(double a) { return __dsqrt_rn(a); }
#else
template <class T>
inline T add(T a, T b) { return a + b; }
template <class T>
inline T mul(T a, T b) { return a * b; }
template <class T>
inline T div(T a, T b) { return a / b; }
template <class T>
inline T sqrt(T a) { return std::sqrt(a); }
#endif
// torch.maximum: NaN wins.
template <class T>
EMBER_HOST_DEVICE inline T maximum(T a, T b) { return (a != a || a > b) ? a : b; }
}  // namespace rn

// torch.optim.SGD. state[0]: momentum_buffer (when momentum != 0). Per element, d = ±g + wd·p;
// with momentum: buf = first_step ? d : momentum·buf + (1 − dampening)·d, d = nesterov ? d +
// momentum·buf : buf; then p = p − lr·d.
template <class T>
struct SgdRule {
  T lr, momentum, one_minus_dampening, weight_decay;
  bool use_momentum, nesterov, maximize;

  EMBER_HOST_DEVICE void operator()(const OptimizerTensor<T>& t, int64_t i) const {
    const T p = t.param[i];
    T d = maximize ? -t.grad[i] : t.grad[i];
    if (weight_decay != T(0)) d = rn::add(d, rn::mul(weight_decay, p));
    if (use_momentum) {
      const T b = t.first_step ? d : rn::add(rn::mul(momentum, t.state[0][i]), rn::mul(one_minus_dampening, d));
      t.state[0][i] = b;
      d = nesterov ? rn::add(d, rn::mul(momentum, b)) : b;
    }
    t.param[i] = rn::add(p, rn::mul(-lr, d));
  }
};

// torch.optim.Adam and (decoupled) torch.optim.AdamW. state: exp_avg, exp_avg_sq and, with
// amsgrad, max_exp_avg_sq. coefficient[0] = lr / (1 − β1^step), coefficient[1] = √(1 − β2^step).
// Adam adds wd·p to the gradient; AdamW first scales p by decay = 1 − lr·wd.
template <class T>
struct AdamRule {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;
  bool amsgrad, decoupled, maximize;

  EMBER_HOST_DEVICE void operator()(const OptimizerTensor<T>& t, int64_t i) const {
    T p = t.param[i];
    T g = maximize ? -t.grad[i] : t.grad[i];
    if (decoupled) {
      p = rn::mul(p, decay);
    } else if (weight_decay != T(0)) {
      g = rn::add(g, rn::mul(weight_decay, p));
    }
    const T m = rn::add(rn::mul(t.state[0][i], beta1), rn::mul(one_minus_beta1, g));
    T v = rn::add(rn::mul(t.state[1][i], beta2), rn::mul(rn::mul(one_minus_beta2, g), g));
    t.state[0][i] = m;
    t.state[1][i] = v;
    if (amsgrad) {
      v = rn::maximum(t.state[2][i], v);
      t.state[2][i] = v;
    }
    const T denom = rn::add(rn::div(rn::sqrt(v), t.coefficient[1]), eps);
    t.param[i] = rn::add(p, rn::div(rn::mul(-t.coefficient[0], m), denom));
  }
};

// torch.optim.RMSprop. state: square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
template <class T>
struct RmspropRule {
  T lr, alpha, one_minus_alpha, eps, weight_decay, momentum;
  bool centered, use_momentum, maximize;

  EMBER_HOST_DEVICE void operator()(const OptimizerTensor<T>& t, int64_t i) const {
    const T p = t.param[i];
    T g = maximize ? -t.grad[i] : t.grad[i];
    if (weight_decay != T(0)) g = rn::add(g, rn::mul(weight_decay, p));
    const T square_avg = rn::add(rn::mul(t.state[0][i], alpha), rn::mul(rn::mul(one_minus_alpha, g), g));
    t.state[0][i] = square_avg;
    T avg;
    if (centered) {
      const T grad_avg = rn::add(rn::mul(t.state[2][i], alpha), rn::mul(one_minus_alpha, g));
      t.state[2][i] = grad_avg;
      avg = rn::sqrt(rn::add(square_avg, rn::mul(rn::mul(T(-1), grad_avg), grad_avg)));
    } else {
      avg = rn::sqrt(square_avg);
    }
    avg = rn::add(avg, eps);
    if (use_momentum) {
      const T b = rn::add(rn::mul(t.state[1][i], momentum), rn::div(g, avg));
      t.state[1][i] = b;
      t.param[i] = rn::add(p, rn::mul(-lr, b));
    } else {
      t.param[i] = rn::add(p, rn::div(rn::mul(-lr, g), avg));
    }
  }
};

// torch.optim.Adagrad. state[0]: sum. coefficient[0] = lr / (1 + (step − 1)·lr_decay).
template <class T>
struct AdagradRule {
  T eps, weight_decay;
  bool maximize;

  EMBER_HOST_DEVICE void operator()(const OptimizerTensor<T>& t, int64_t i) const {
    const T p = t.param[i];
    T g = maximize ? -t.grad[i] : t.grad[i];
    if (weight_decay != T(0)) g = rn::add(g, rn::mul(weight_decay, p));
    const T sum = rn::add(t.state[0][i], rn::mul(rn::mul(T(1), g), g));
    t.state[0][i] = sum;
    const T std_dev = rn::add(rn::sqrt(sum), eps);
    t.param[i] = rn::add(p, rn::div(rn::mul(-t.coefficient[0], g), std_dev));
  }
};

}  // namespace ember::kernels
