// log_softmax, nll_loss, cross_entropy (fused) and mse_loss, with their backward nodes.
#include "core/autograd.h"
#include "core/ops.h"
#include "kernels/cpu/loss.h"
#include "nn/functional.h"
#include "nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

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
  if (!input.device().is_cpu()) detail::cuda_not_ready(op);
  Tensor x = input.detach().contiguous();
  Tensor out = empty(x.sizes(), {.dtype = x.dtype()});
  const int64_t rows = x.size(0), cols = x.size(1);
  visit_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::log_softmax_forward<T>(x.data<T>(), out.data<T>(), rows, cols);
  });
  if (autograd::needs_grad({input})) {
    SavedTensor saved_out(out);
    autograd::record(op, {input}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("log_softmax"), dy = g[0].contiguous();
      Tensor dx = empty(y.sizes(), {.dtype = y.dtype()});
      visit_floating(y.dtype(), "log_softmax", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::log_softmax_backward<T>(dy.data<T>(), y.data<T>(), dx.data<T>(), rows, cols);
      });
      return std::vector<Tensor>{dx};
    });
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction) {
  check_classification("nll_loss", log_probs, target);
  if (!log_probs.device().is_cpu()) detail::cuda_not_ready("nll_loss");
  Tensor x = log_probs.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype()});
  visit_floating(x.dtype(), "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::nll_loss_forward<T>(x.data<T>(), t.data<int64_t>(), losses.data<T>(), rows, cols);
  });
  if (autograd::needs_grad({log_probs})) {
    autograd::record("nll_loss", {log_probs}, {&losses}, [=](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype()});
      visit_floating(grad_rows.dtype(), "nll_loss", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::nll_loss_backward<T>(grad_rows.data<T>(), t.data<int64_t>(), dx.data<T>(), rows, cols);
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction) {
  check_classification("cross_entropy", logits, target);
  if (!logits.device().is_cpu()) detail::cuda_not_ready("cross_entropy");
  Tensor x = logits.detach().contiguous(), t = target.contiguous();
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor losses = empty({rows}, {.dtype = x.dtype()});
  Tensor log_probs = empty({rows, cols}, {.dtype = x.dtype()});
  visit_floating(x.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::cpu::cross_entropy_forward<T>(x.data<T>(), t.data<int64_t>(), log_probs.data<T>(),
                                           losses.data<T>(), rows, cols);
  });
  if (autograd::needs_grad({logits})) {
    autograd::record("cross_entropy", {logits}, {&losses}, [=](const std::vector<Tensor>& g) {
      Tensor grad_rows = g[0].contiguous();
      Tensor dx = empty({rows, cols}, {.dtype = grad_rows.dtype()});
      visit_floating(grad_rows.dtype(), "cross_entropy", [&](auto tag) {
        using T = typename decltype(tag)::type;
        kernels::cpu::cross_entropy_backward<T>(log_probs.data<T>(), t.data<int64_t>(),
                                                grad_rows.data<T>(), dx.data<T>(), rows, cols);
      });
      return std::vector<Tensor>{dx};
    });
  }
  return reduce_rows(losses, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  detail::check_defined(input, "mse_loss", "input");
  detail::check_defined(target, "mse_loss", "target");
  EMBER_CHECK(input.sizes() == target.sizes(), "mse_loss: input ", input.sizes(), " and target ",
              target.sizes(), " must have the same shape");
  detail::check_floating(input, "mse_loss", "input");
  Tensor diff = sub(input, target);
  return reduce_rows(mul(diff, diff), reduction);
}

}  // namespace ember::nn::functional
