// linear (x·Wᵀ + b) on the GEMM kernels (CPU; CUDA hand-written or cuBLAS), and its backward node.
#include <algorithm>

#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cpu/linear.h"
#include "ember/kernels/cuda/gemm.h"
#include "ember/kernels/cuda/linear.h"
#include "ember/kernels/vendor/cublas_gemm.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// A leading dimension for a contiguous row of n features: gemm (and cuBLAS, which rejects 0)
// needs ld >= 1 even when a layer has 0 input or output features.
int64_t ld(int64_t n) { return std::max<int64_t>(n, 1); }

// C = alpha * op(A) * op(B) + beta * C on the context's device: the CPU GEMM, cuBLAS under the
// vendor backend, or the hand-written CUDA GEMM.
template <class T>
void gemm(const KernelContext& on, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (on.cpu()) {
    kernels::cpu::gemm<T>(trans_a, trans_b, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc);
  } else if (on.vendor()) {
    kernels::vendor::gemm<T>(trans_a, trans_b, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc, on.stream());
  } else {
    kernels::cuda::gemm<T>(trans_a, trans_b, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc, on.stream());
  }
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  constexpr const char* op = "linear";
  detail::check_defined(input, op, "input");
  detail::check_defined(weight, op, "weight");
  EMBER_CHECK(weight.dim() == 2, op, ": weight must be 2-D [out_features, in_features], got ", weight.sizes());
  EMBER_CHECK(input.dim() >= 1, op, ": input must have at least 1 dim, got a 0-dim tensor");
  detail::check_floating(input, op, "input");
  detail::check_same(input, weight, op, "input", "weight");
  EMBER_CHECK(input.size(-1) == weight.size(1), op, ": input ", input.sizes(), " has ", input.size(-1),
              " features but weight ", weight.sizes(), " expects ", weight.size(1));
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  if (bias.defined()) {
    detail::check_same(input, bias, op, "input", "bias");
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_features, op, ": bias must be [", out_features,
                "] to match weight ", weight.sizes(), ", got ", bias.sizes());
  }
  if (input.dim() != 2) {
    // [*, in] -> [rows, in] through views, so autograd reshapes the gradient back.
    Shape out_shape = input.sizes();
    out_shape.back() = out_features;
    return linear(input.reshape({-1, in_features}), weight, bias).reshape(out_shape);
  }
  Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  const int64_t rows = x.size(0);
  Tensor out = empty({rows, out_features}, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(x);
  visit_floating(x.dtype(), op, [&](auto tag) {  // out = broadcast(b), then out += x·Wᵀ
    using T = typename decltype(tag)::type;
    T* y = out.data<T>();
    if (b.defined()) {
      if (on.cpu()) kernels::cpu::broadcast_rows<T>(b.data<T>(), rows, out_features, y);
      else kernels::cuda::broadcast_rows<T>(b.data<T>(), rows, out_features, y, on.stream());
    }
    gemm<T>(on, false, true, rows, out_features, in_features, x.data<T>(), ld(in_features), w.data<T>(),
            ld(in_features), b.defined() ? T(1) : T(0), y, ld(out_features));
  });
  if (autograd::needs_grad({input, weight, bias})) {
    SavedTensor saved_x(x), saved_w(w);
    bool need_x = input.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    autograd::record(op, {input, weight, bias}, {&out}, [=, backend = on.backend()](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack(op), ws = saved_w.unpack(op);
      Tensor dy = g[0].contiguous();
      const TensorOptions options{.dtype = xs.dtype(), .device = xs.device()};
      Tensor dx = need_x ? empty({rows, in_features}, options) : Tensor();
      Tensor dw = need_w ? empty({out_features, in_features}, options) : Tensor();
      Tensor db = need_b ? empty({out_features}, options) : Tensor();
      KernelContext on(xs, backend);
      visit_floating(xs.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (need_x) {  // dx = dy·W
          gemm<T>(on, false, false, rows, in_features, out_features, dy.data<T>(), ld(out_features), ws.data<T>(),
                  ld(in_features), T(0), dx.data<T>(), ld(in_features));
        }
        if (need_w) {  // dW = dyᵀ·x
          gemm<T>(on, true, false, out_features, in_features, rows, dy.data<T>(), ld(out_features), xs.data<T>(),
                  ld(in_features), T(0), dw.data<T>(), ld(in_features));
        }
        if (need_b) {  // db = column sums of dy
          if (on.cpu()) kernels::cpu::column_sums<T>(dy.data<T>(), rows, out_features, db.data<T>());
          else kernels::cuda::column_sums<T>(dy.data<T>(), rows, out_features, db.data<T>(), on.stream());
        }
      });
      return std::vector<Tensor>{dx, dw, db};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
