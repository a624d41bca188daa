// log_softmax, nll_loss, cross_entropy (fused) and mse_loss, with their backward nodes.
#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/loss.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"
#ifdef EMBER_WITH_CUDA
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/loss.h"
#endif

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

// The device's current stream, with the device made current for the guard's scope.
#ifdef EMBER_WITH_CUDA
struct CudaContext {
  explicit CudaContext(const Tensor& t) : guard(t.device().index()), stream(cuda::current_stream(t.device().index())) {}
  cuda::DeviceGuard guard;
  cuda::Stream stream;
};
#endif

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

// Per-row losses -> the reduced loss; the backward of the reduction gives per-row gradients.
Tensor reduce_rows(const Tensor& rows, Reduction reduction) {
  if (!rows.device().is_cpu() && reduction != Reduction::None) {
#ifdef EMBER_WITH_CUDA
    // One kernel to one number (core's sum / mean need not have a CUDA kernel for this).
    const int64_t n = rows.numel();
    const double scale = reduction == Reduction::Mean ? 1.0 / static_cast<double>(n) : 1.0;
    const char* op = reduction == Reduction::Mean ? "mean" : "sum";
    Tensor r = rows.detach().contiguous();
    Tensor out = empty({}, {.dtype = r.dtype(), .device = r.device()});
    {
      CudaContext ctx(r);
      visit_floating(r.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cuda::sum_scaled<T>(r.data<T>(), out.data<T>(), n, scale, ctx.stream);
      });
    }
    if (autograd::needs_grad({rows})) {
      Shape sizes = rows.sizes();
      autograd::record(op, {rows}, {&out}, [=](const std::vector<Tensor>& g) {
        Tensor grad = g[0].contiguous();
        Tensor d = empty(sizes, {.dtype = grad.dtype(), .device = grad.device()});
        CudaContext ctx(grad);
        visit_floating(grad.dtype(), op, [&](auto tag) {
          using T = typename decltype(tag)::type;
          kernels::cuda::broadcast_scaled<T>(grad.data<T>(), d.data<T>(), n, scale, ctx.stream);
        });
        return std::vector<Tensor>{d};
      });
    }
    return out;
#else
    detail::cuda_not_built(reduction == Reduction::Mean ? "mean" : "sum");
#endif
  }
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
#ifndef EMBER_WITH_CUDA
  if (!input.device().is_cpu()) detail::cuda_not_built(op);
#endif
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  const int64_t rows = x.size(0), cols = x.size(1);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.device().is_cpu()) {
      kernels::cpu::log_softmax_forward<T>(x.data<T>(), out.data<T>(), rows, cols);
    } else {
#ifdef EMBER_WITH_CUDA
      CudaContext ctx(x);
      kernels::cuda::log_softmax_forward<T>(x.data<T>(), out.data<T>(), rows, cols, ctx.stream);
#endif
    }
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record(op, {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("log_softmax"), dy = g[0].contiguous();
      Tensor dx = empty(y.sizes(), {.dtype = y.dtype(), .device = y.device()});
      visit_floating(y.dtype(), "log_softmax", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (y.device().is_cpu()) {
          kernels::cpu::log_softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), rows, cols);
        } else {
#ifdef EMBER_WITH_CUDA
          CudaContext ctx(y);
          kernels::cuda::log_softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), rows, cols, ctx.stream);
#endif
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  check_classification("nll_loss", log_probs, target);
#ifndef EMBER_WITH_CUDA
  if (!log_probs.device().is_cpu()) detail::cuda_not_built("nll_loss");
#endif
  Tensor x = log_probs.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  visit_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.device().is_cpu()) {
      kernels::cpu::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), losses.data<T>(), rows, cols);
    } else {
#ifdef EMBER_WITH_CUDA
      CudaContext ctx(x);
      kernels::cuda::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), losses.data<T>(), rows, cols, ctx.stream);
#endif
    }
  });
  if (autograd::needs_grad({log_probs})) {
    autograd::record("nll_loss", {log_probs}, {&losses}, [=](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype(), .device = grad_rows.device()});
      visit_floating(grad_rows.dtype(), "nll_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (dx.device().is_cpu()) {
          kernels::cpu::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), dx.data<T>(), rows, cols);
        } else {
#ifdef EMBER_WITH_CUDA
          CudaContext ctx(dx);
          kernels::cuda::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), dx.data<T>(), rows, cols,
                                              ctx.stream);
#endif
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  check_classification("cross_entropy", logits, target);
#ifndef EMBER_WITH_CUDA
  if (!logits.device().is_cpu()) detail::cuda_not_built("cross_entropy");
#endif
  Tensor x = logits.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype(), .device = x.device()});
  Tensor log_probs = empty({rows, cols}, {.dtype = x.dtype(), .device = x.device()});
  visit_floating(x.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (x.device().is_cpu()) {
      kernels::cpu::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), log_probs.data<T>(),
                                             losses.data<T>(), rows, cols);
    } else {
#ifdef EMBER_WITH_CUDA
      CudaContext ctx(x);  // one fused kernel: log_softmax and the picked -logp per row
      kernels::cuda::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), log_probs.data<T>(),
                                              losses.data<T>(), rows, cols, ctx.stream);
#endif
    }
  });
  if (autograd::needs_grad({logits})) {
    autograd::record("cross_entropy", {logits}, {&losses}, [=](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype(), .device = grad_rows.device()});
      visit_floating(grad_rows.dtype(), "cross_entropy", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (dx.device().is_cpu()) {
          kernels::cpu::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(),
                                                  grad_rows.data<T>(), dx.data<T>(), rows, cols);
        } else {
#ifdef EMBER_WITH_CUDA
          CudaContext ctx(dx);  // one kernel: (softmax - onehot) * grad_rows
          kernels::cuda::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(), grad_rows.data<T>(),
                                                   dx.data<T>(), rows, cols, ctx.stream);
#endif
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

#ifdef EMBER_WITH_CUDA
namespace {

// mse_loss fused on one CUDA device: input and target of one shape and dtype.
Tensor mse_loss_cuda(const Tensor& input, const Tensor& target, Reduction reduction) {
  Tensor x = input.detach().contiguous(), t = target.detach().contiguous();
  const int64_t n = x.numel();
  const bool reduce = reduction != Reduction::None;
  const double scale = reduction == Reduction::Mean ? 1.0 / static_cast<double>(n) : 1.0;
  Tensor out = empty(reduce ? Shape{} : x.sizes(), {.dtype = x.dtype(), .device = x.device()});
  {
    CudaContext ctx(x);
    visit_floating(x.dtype(), "mse_loss", [&](auto tag) {
      using T = typename decltype(tag)::type;
      kernels::cuda::mse_loss_forward<T>(x.data<T>(), t.data<T>(), out.data<T>(), n, reduce, scale, ctx.stream);
    });
  }
  if (autograd::needs_grad({input, target})) {
    SavedTensor saved_x(x), saved_t(t);
    const bool target_grad = target.requires_grad();
    autograd::record("mse_loss", {input, target}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("mse_loss"), ts = saved_t.unpack("mse_loss");
      Tensor grad = g[0].contiguous();
      Tensor dx = empty(xs.sizes(), {.dtype = xs.dtype(), .device = xs.device()});
      Tensor dt = target_grad ? empty(xs.sizes(), {.dtype = xs.dtype(), .device = xs.device()}) : Tensor();
      CudaContext ctx(xs);
      visit_floating(xs.dtype(), "mse_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cuda::mse_loss_backward<T>(xs.data<T>(), ts.data<T>(), grad.data<T>(), reduce, scale, dx.data<T>(),
                                            target_grad ? dt.data<T>() : nullptr, n, ctx.stream);
      });
      return std::vector<Tensor>{dx, dt};
    });
  }
  return out;
}

}  // namespace
#endif

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  detail::check_defined(input, "mse_loss", "input");
  detail::check_defined(target, "mse_loss", "target");
  EMBER_CHECK(input.sizes() == target.sizes(), "mse_loss: input ", input.sizes(), " and target ",
              target.sizes(), " must have the same shape");
  detail::check_floating(input, "mse_loss", "input");
  if (!input.device().is_cpu() && target.device() == input.device() && target.dtype() == input.dtype()) {
#ifdef EMBER_WITH_CUDA
    return mse_loss_cuda(input, target, reduction);
#else
    detail::cuda_not_built("mse_loss");
#endif
  }
  // Otherwise core's ops: they name a device mismatch and promote mixed dtypes.
  Tensor diff = sub(input, target);
  return reduce_rows(mul(diff, diff), reduction);
}

}  // namespace ember::nn::functional
