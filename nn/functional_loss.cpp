// log_softmax, nll_loss, cross_entropy (fused) and mse_loss (fused), with their backward nodes.
#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/loss.h"
#include "ember/kernels/cuda/loss.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// Note [CUDA targets]: the range check of class labels needs their values, so a CUDA target is
// copied to the host before anything is launched (check_classification). That costs a
// synchronisation per call, but a target is small ([N] int64), the message is then exactly the
// CPU's (first bad label and its position), and a bad label never reaches a kernel. Checking on
// the device and copying a flag back would synchronise just the same, only later. The kernels
// still guard against an out-of-range label (NaN, not an out-of-bounds read), which is all a
// CUDA graph capture gets: it cannot wait for the copy, so the check is skipped there.

// Checks [N, classes] scores against an int64 [N] target with every label in range, naming the
// first bad label and its position.
void check_classification(const char* op, const Tensor& scores, const Tensor& target) {
  detail::check_defined(scores, op, "input");
  detail::check_defined(target, op, "target");
  EMBER_CHECK(scores.dim() == 2, op, ": input must be 2-D [N, classes], got ", scores.sizes());
  detail::check_floating(scores, op, "input");
  EMBER_CHECK(target.dtype() == kInt64, op, ": target must be int64 class indices, got ",
              dtype_name(target.dtype()));
  EMBER_CHECK(target.dim() == 1 && target.size(0) == scores.size(0), op, ": target must be [",
              scores.size(0), "] to match input ", scores.sizes(), ", got ", target.sizes());
  EMBER_CHECK(target.device() == scores.device(), op, ": input is on ", scores.device(),
              " but target is on ", target.device());
  // Inside a CUDA graph capture the labels cannot be read back (that waits for the GPU); the
  // kernels then turn an out-of-range label into a NaN loss instead of an error.
  if (target.is_cuda() && cuda::is_capturing(target.device().index())) return;
  Tensor labels = target.to(Device::cpu()).contiguous();
  const int64_t* p = labels.data<int64_t>();
  const int64_t classes = scores.size(1);
  for (int64_t i = 0; i < labels.numel(); ++i) {
    EMBER_CHECK(p[i] >= 0 && p[i] < classes, op, ": target[", i, "] = ", p[i],
                " is out of range for ", classes, " classes (expected [0, ", classes - 1, "])");
  }
}

// Per-row losses -> the reduced loss, by core's sum and mean on either device (their backward
// gives the per-row gradients).
Tensor reduce_rows(const Tensor& rows, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return rows;
    case Reduction::Sum: return sum(rows);
    case Reduction::Mean: return mean(rows);
  }
  return rows;
}

}  // namespace

Tensor log_softmax(const Tensor& input, int64_t dim) {
  constexpr const char* op = "log_softmax";
  detail::check_defined(input, op, "input");
  EMBER_CHECK(input.dim() == 2, op, ": input must be 2-D [N, classes], got ", input.sizes());
  EMBER_CHECK(dim == 1 || dim == -1, op, ": only dim 1 of a 2-D input is supported, got dim ", dim);
  detail::check_floating(input, op, "input");
  Tensor x = input.detach().contiguous();
  Tensor out = empty_like(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) kernels::cpu::log_softmax_forward<T>(x.data<T>(), out.data<T>(), rows, cols);
    else kernels::cuda::log_softmax_forward<T>(x.data<T>(), out.data<T>(), rows, cols, on.stream());
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack(op), dy = g[0].contiguous();
      Tensor dx = empty_like(y);
      KernelContext on(y, backend);
      visit_floating(y.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::log_softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), rows, cols);
        } else {
          kernels::cuda::log_softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), rows, cols, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  constexpr const char* op = "nll_loss";
  check_classification(op, log_probs, target);
  Tensor x = log_probs.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), losses.data<T>(), rows, cols);
    } else {
      kernels::cuda::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), losses.data<T>(), rows, cols, on.stream());
    }
  });
  if (autograd::needs_grad({log_probs})) {
    autograd::record(op, {log_probs}, {&losses}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype(), .device = grad_rows.device()});
      KernelContext on(dx, backend);
      visit_floating(dx.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), dx.data<T>(), rows, cols);
        } else {
          kernels::cuda::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), dx.data<T>(), rows, cols,
                                              on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  constexpr const char* op = "cross_entropy";
  check_classification(op, logits, target);
  Tensor x = logits.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  Tensor log_probs = empty_like(x);  // kept for the backward
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {  // one fused kernel: log_softmax and -logp[target]
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), log_probs.data<T>(),
                                             losses.data<T>(), rows, cols);
    } else {
      kernels::cuda::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), log_probs.data<T>(),
                                              losses.data<T>(), rows, cols, on.stream());
    }
  });
  if (autograd::needs_grad({logits})) {
    autograd::record(op, {logits}, {&losses}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype(), .device = grad_rows.device()});
      KernelContext on(dx, backend);
      visit_floating(dx.dtype(), op, [&](auto tag) {  // one kernel: (softmax - onehot) * grad_rows
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(), grad_rows.data<T>(),
                                                  dx.data<T>(), rows, cols);
        } else {
          kernels::cuda::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(), grad_rows.data<T>(),
                                                   dx.data<T>(), rows, cols, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  constexpr const char* op = "mse_loss";
  detail::check_defined(input, op, "input");
  detail::check_defined(target, op, "target");
  EMBER_CHECK(input.sizes() == target.sizes(), op, ": input ", input.sizes(), " and target ", target.sizes(),
              " must have the same shape");
  detail::check_floating(input, op, "input");
  EMBER_CHECK(target.device() == input.device(), op, ": input is on ", input.device(), " but target is on ",
              target.device());
  // Mixed dtypes meet in the promoted one (as core's sub would), through differentiable casts.
  const DType dtype = promote_types(input.dtype(), target.dtype());
  if (input.dtype() != dtype || target.dtype() != dtype) return mse_loss(input.to(dtype), target.to(dtype), reduction);

  Tensor x = input.detach().contiguous(), t = target.detach().contiguous();
  const int64_t n = x.numel();
  const bool reduce = reduction != Reduction::None;
  const double scale = reduction == Reduction::Mean ? 1.0 / static_cast<double>(n) : 1.0;
  Tensor out = empty(reduce ? Shape{} : x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) kernels::cpu::mse_loss_forward<T>(x.data<T>(), t.data<T>(), out.data<T>(), n, reduce, scale);
    else kernels::cuda::mse_loss_forward<T>(x.data<T>(), t.data<T>(), out.data<T>(), n, reduce, scale, on.stream());
  });
  if (autograd::needs_grad({input, target})) {
    SavedTensor saved_x(x), saved_t(t);
    const bool target_grad = target.requires_grad();
    autograd::record(op, {input, target}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack(op), ts = saved_t.unpack(op);
      Tensor grad = g[0].contiguous();
      Tensor dx = empty_like(xs);
      Tensor dt = target_grad ? empty_like(xs) : Tensor();
      KernelContext on(xs, backend);
      visit_floating(xs.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* pdt = target_grad ? dt.data<T>() : nullptr;
        if (on.cpu()) {
          kernels::cpu::mse_loss_backward<T>(xs.data<T>(), ts.data<T>(), grad.data<T>(), reduce, scale, dx.data<T>(),
                                             pdt, n);
        } else {
          kernels::cuda::mse_loss_backward<T>(xs.data<T>(), ts.data<T>(), grad.data<T>(), reduce, scale,
                                              dx.data<T>(), pdt, n, on.stream());
        }
      });
      return std::vector<Tensor>{dx, dt};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
