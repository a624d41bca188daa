// softmax and log_softmax over any dim, nll_loss and cross_entropy (fused; class weights, ignore_index,
// label smoothing, per-pixel targets) and mse_loss (fused), with their backward nodes.
#include <algorithm>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/loss.h"
#include "ember/kernels/cpu/loss.h"
#include "ember/kernels/cuda/loss.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// Note [CUDA targets]: the range check of class labels needs their values, so a CUDA target is
// copied to the host before anything is launched (check_classification). That costs a
// synchronisation per call, but a target is small, the message is then exactly the CPU's (first
// bad label and its position), and a bad label never reaches a kernel. Checking on the device and
// copying a flag back would synchronise just the same, only later. The kernels still guard against
// an out-of-range label (NaN, not an out-of-bounds read), which is all a CUDA graph capture gets:
// it cannot wait for the copy, so the check is skipped there.

// The validated geometry of a classification loss, and whether a label hit ignore_index (unknown
// under a CUDA graph capture: then assumed so).
struct Classification {
  kernels::ClassLossShape shape;
  bool any_ignored = true;
};

// Checks [N, C] or [N, C, d1, ...] scores against an int64 [N] or [N, d1, ...] target with every
// label in [0, C) or ignore_index (naming the first bad label and its flat position), and the
// class weights ([C], or undefined).
Classification check_classification(const char* op, const Tensor& scores, const Tensor& target, const Tensor& weight,
                                    int64_t ignore_index) {
  detail::check_defined(scores, op, "input");
  detail::check_defined(target, op, "target");
  EMBER_CHECK(scores.dim() >= 2, op, ": input must be [N, C] or [N, C, d1, ...], got ", scores.sizes());
  detail::check_floating(scores, op, "input");
  EMBER_CHECK(target.dtype() == kInt64, op, ": target must be int64 class indices, got ",
              dtype_name(target.dtype()));
  Shape expected = scores.sizes();
  expected.erase(expected.begin() + 1);
  EMBER_CHECK(target.sizes() == expected, op, ": target must be ", expected, " to match input ", scores.sizes(),
              ", got ", target.sizes());
  EMBER_CHECK(target.device() == scores.device(), op, ": input is on ", scores.device(),
              " but target is on ", target.device());
  const int64_t classes = scores.size(1);
  if (weight.defined()) {
    EMBER_CHECK(weight.dim() == 1 && weight.size(0) == classes, op, ": weight must be [", classes,
                "] (one per class), got ", weight.sizes());
    detail::check_same(weight, scores, op, "weight", "input");
  }
  Classification c;
  c.shape.outer = scores.size(0);
  c.shape.classes = classes;
  for (int64_t k = 2; k < scores.dim(); ++k) c.shape.inner *= scores.size(k);
  c.shape.ignore_index = ignore_index;
  // Inside a CUDA graph capture the labels cannot be read back (that waits for the GPU); the
  // kernels then turn an out-of-range label into a NaN loss instead of an error.
  if (target.is_cuda() && cuda::is_capturing(target.device().index())) return c;
  Tensor labels = target.to(Device::cpu()).contiguous();
  const int64_t* p = labels.data<int64_t>();
  c.any_ignored = false;
  for (int64_t i = 0; i < labels.numel(); ++i) {
    if (p[i] == ignore_index) {
      c.any_ignored = true;
      continue;
    }
    EMBER_CHECK(p[i] >= 0 && p[i] < classes, op, ": target[", i, "] = ", p[i], " is out of range for ", classes,
                " classes (expected [0, ", classes - 1, "])");
  }
  return c;
}

// Per-row losses (target-shaped) -> the reduced loss, by core's differentiable ops on either
// device. A mean divides by the summed weights of the rows (row_weights), or by their count when
// every row weighs 1.
Tensor reduce_rows(const Tensor& rows, const Tensor& row_weights, bool unit_weights, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return rows;
    case Reduction::Sum: return sum(rows);
    case Reduction::Mean: return unit_weights ? mean(rows) : div(sum(rows), sum(row_weights));
    case Reduction::BatchMean: break;  // rejected at the entry (check_not_batchmean)
  }
  return rows;
}

// The softmax family over `dim`: the input viewed as [outer, size, inner].
Tensor softmax_op(const char* op, const Tensor& input, int64_t dim, bool log) {
  detail::check_defined(input, op, "input");
  detail::check_floating(input, op, "input");
  const int64_t rank = std::max<int64_t>(input.dim(), 1);  // a 0-d input is one row of one
  EMBER_CHECK(dim >= -rank && dim < rank, op, ": dim ", dim, " is out of range for a ", input.dim(),
              "-D input (expected [", -rank, ", ", rank - 1, "])");
  const int64_t d = dim < 0 ? dim + rank : dim;
  kernels::SoftmaxShape shape{.log = log};
  for (int64_t k = 0; k < input.dim(); ++k) {
    if (k < d) shape.outer *= input.size(k);
    else if (k == d) shape.size = input.size(k);
    else shape.inner *= input.size(k);
  }
  Tensor x = input.detach().contiguous();
  Tensor out = empty_like(x);
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) kernels::cpu::softmax_forward<T>(x.data<T>(), out.data<T>(), shape);
    else kernels::cuda::softmax_forward<T>(x.data<T>(), out.data<T>(), shape, on.stream());
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record(op, {input}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack(op), dy = g[0].contiguous();
      Tensor dx = empty_like(y);
      KernelContext on(y, backend);
      visit_floating(y.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) kernels::cpu::softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), shape);
        else kernels::cuda::softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), shape, on.stream());
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

Tensor log_softmax(const Tensor& input, int64_t dim) { return softmax_op("log_softmax", input, dim, true); }

Tensor softmax(const Tensor& input, int64_t dim) { return softmax_op("softmax", input, dim, false); }

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NllLossOptions& options) {
  constexpr const char* op = "nll_loss";
  detail::check_not_batchmean(options.reduction, op);
  const Classification c = check_classification(op, log_probs, target, options.weight, options.ignore_index);
  const kernels::ClassLossShape shape = c.shape;
  Tensor x = log_probs.detach().contiguous(), t = target.contiguous();
  Tensor w = options.weight.defined() ? options.weight.detach().contiguous() : Tensor();
  const TensorOptions like{.dtype = x.dtype(), .device = x.device()};
  Tensor losses = empty(target.sizes(), like), row_weights = empty(target.sizes(), like);
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), data_or_null<T>(w), losses.data<T>(),
                                        row_weights.data<T>(), shape);
    } else {
      kernels::cuda::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), data_or_null<T>(w), losses.data<T>(),
                                         row_weights.data<T>(), shape, on.stream());
    }
  });
  if (autograd::needs_grad({log_probs})) {
    const Shape sizes = x.sizes();
    autograd::record(op, {log_probs}, {&losses}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty(sizes, {.dtype = grad_rows.dtype(), .device = grad_rows.device()});
      KernelContext on(dx, backend);
      visit_floating(dx.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (on.cpu()) {
          kernels::cpu::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), data_or_null<T>(w),
                                             dx.data<T>(), shape);
        } else {
          kernels::cuda::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), data_or_null<T>(w),
                                              dx.data<T>(), shape, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, row_weights, !w.defined() && !c.any_ignored, options.reduction);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  return nll_loss(log_probs, target, NllLossOptions{.reduction = reduction});
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  constexpr const char* op = "cross_entropy";
  detail::check_not_batchmean(options.reduction, op);
  EMBER_CHECK(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0, op,
              ": label_smoothing must be in [0, 1], got ", options.label_smoothing);
  Classification c = check_classification(op, logits, target, options.weight, options.ignore_index);
  c.shape.label_smoothing = options.label_smoothing;
  const kernels::ClassLossShape shape = c.shape;
  Tensor x = logits.detach().contiguous(), t = target.contiguous();
  Tensor w = options.weight.defined() ? options.weight.detach().contiguous() : Tensor();
  const TensorOptions like{.dtype = x.dtype(), .device = x.device()};
  Tensor losses = empty(target.sizes(), like), row_weights = empty(target.sizes(), like);
  Tensor log_probs = empty_like(x);  // kept for the backward
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {  // one fused kernel: log_softmax and each row's loss
    using T = typename decltype(tag)::type;
    if (on.cpu()) {
      kernels::cpu::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), data_or_null<T>(w), log_probs.data<T>(),
                                             losses.data<T>(), row_weights.data<T>(), shape);
    } else {
      kernels::cuda::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), data_or_null<T>(w),
                                              log_probs.data<T>(), losses.data<T>(), row_weights.data<T>(), shape,
                                              on.stream());
    }
  });
  if (autograd::needs_grad({logits})) {
    // The backward's smoothing term needs the sum of the class weights (on the weights' device).
    Tensor weight_sum = w.defined() && shape.label_smoothing != 0.0 ? sum(w) : Tensor();
    autograd::record(op, {logits}, {&losses}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty_like(log_probs);
      KernelContext on(dx, backend);
      visit_floating(dx.dtype(), op, [&](auto tag) {  // one kernel for the whole gradient
        using T = typename decltype(tag)::type;
        const T* wp = data_or_null<T>(w);
        const T* ws = data_or_null<T>(weight_sum);
        if (on.cpu()) {
          kernels::cpu::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(), wp, ws, grad_rows.data<T>(),
                                                  dx.data<T>(), shape);
        } else {
          kernels::cuda::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(), wp, ws,
                                                   grad_rows.data<T>(), dx.data<T>(), shape, on.stream());
        }
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, row_weights, !w.defined() && !c.any_ignored, options.reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  return cross_entropy(logits, target, CrossEntropyOptions{.reduction = reduction});
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  constexpr const char* op = "mse_loss";
  detail::check_not_batchmean(reduction, op);
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
