// linear (x·Wᵀ + b) on the GEMM kernels (CPU; CUDA hand-written or cuBLAS), and its backward node.
#include <algorithm>

#include "ember/core/autograd.h"
#include "ember/core/backend.h"
#include "ember/kernels/cpu/gemm.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

#ifdef EMBER_WITH_CUDA
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/gemm.h"
#include "ember/kernels/vendor/cublas_gemm.h"
#endif

namespace ember::nn::functional {

using autograd::SavedTensor;

namespace {

// A leading dimension for a contiguous row of n features: gemm (and cuBLAS, which rejects 0)
// needs ld >= 1 even when a layer has 0 input or output features.
int64_t ld(int64_t n) { return std::max<int64_t>(n, 1); }

#ifdef EMBER_WITH_CUDA
// The GEMM linear runs on CUDA: hand-written or cuBLAS, by ember::backend().
template <class T>
auto cuda_gemm() {
  return backend() == Backend::Vendor ? &kernels::vendor::gemm<T> : &kernels::cuda::gemm<T>;
}

// out = x·Wᵀ (+ b), x [rows, in] and w [out, in] contiguous on one CUDA device.
Tensor linear_forward_cuda(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t rows = x.size(0), in_features = x.size(1), out_features = w.size(0);
  Tensor out = empty({rows, out_features}, {.dtype = x.dtype(), .device = x.device()});
  const int device = x.device().index();
  cuda::DeviceGuard guard(device);
  cuda::Stream stream = cuda::current_stream(device);
  visit_floating(x.dtype(), "linear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* y = out.data<T>();
    if (b.defined()) kernels::cuda::broadcast_rows<T>(b.data<T>(), rows, out_features, y, stream);
    cuda_gemm<T>()(false, true, rows, out_features, in_features, T(1), x.data<T>(), ld(in_features),
                   w.data<T>(), ld(in_features), b.defined() ? T(1) : T(0), y, ld(out_features), stream);
  });
  return out;
}

// dx = dy·W, dW = dyᵀ·x, db = column sums of dy (each only when asked for).
void linear_backward_cuda(const Tensor& dy, const Tensor& xs, const Tensor& ws, bool need_x, bool need_w,
                          bool need_b, Tensor& dx, Tensor& dw, Tensor& db) {
  const int64_t rows = xs.size(0), in_features = xs.size(1), out_features = ws.size(0);
  const TensorOptions options{.dtype = xs.dtype(), .device = xs.device()};
  const int device = xs.device().index();
  cuda::DeviceGuard guard(device);
  cuda::Stream stream = cuda::current_stream(device);
  visit_floating(xs.dtype(), "linear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto gemm = cuda_gemm<T>();
    if (need_x) {
      dx = empty({rows, in_features}, options);
      gemm(false, false, rows, in_features, out_features, T(1), dy.data<T>(), ld(out_features), ws.data<T>(),
           ld(in_features), T(0), dx.data<T>(), ld(in_features), stream);
    }
    if (need_w) {
      dw = empty({out_features, in_features}, options);
      gemm(true, false, out_features, in_features, rows, T(1), dy.data<T>(), ld(out_features), xs.data<T>(),
           ld(in_features), T(0), dw.data<T>(), ld(in_features), stream);
    }
    if (need_b) {
      db = empty({out_features}, options);
      kernels::cuda::column_sums<T>(dy.data<T>(), rows, out_features, db.data<T>(), stream);
    }
  });
}
#endif

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
  Tensor out;
  if (x.is_cuda()) {
#ifdef EMBER_WITH_CUDA
    out = linear_forward_cuda(x, w, b);
#else
    detail::cuda_not_built(op);
#endif
  } else {
    out = empty({rows, out_features}, {.dtype = x.dtype()});
    visit_floating(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* y = out.data<T>();
      if (b.defined()) {  // y = broadcast(b), then y += x·Wᵀ
        const T* pb = b.data<T>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < out_features; ++j) y[r * out_features + j] = pb[j];
      }
      kernels::cpu::gemm<T>(false, true, rows, out_features, in_features, T(1), x.data<T>(), ld(in_features),
                            w.data<T>(), ld(in_features), b.defined() ? T(1) : T(0), y, ld(out_features));
    });
  }
  if (autograd::needs_grad({input, weight, bias})) {
    SavedTensor saved_x(x), saved_w(w);
    bool need_x = input.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    autograd::record(op, {input, weight, bias}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor xs = saved_x.unpack("linear"), ws = saved_w.unpack("linear");
      Tensor dy = g[0].contiguous();
      Tensor dx, dw, db;
      if (xs.is_cuda()) {
#ifdef EMBER_WITH_CUDA
        linear_backward_cuda(dy, xs, ws, need_x, need_w, need_b, dx, dw, db);
#else
        detail::cuda_not_built("linear");
#endif
        return std::vector<Tensor>{dx, dw, db};
      }
      visit_floating(xs.dtype(), "linear", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (need_x) {  // dx = dy·W
          dx = empty({rows, in_features}, {.dtype = xs.dtype()});
          kernels::cpu::gemm<T>(false, false, rows, in_features, out_features, T(1), dy.data<T>(),
                                ld(out_features), ws.data<T>(), ld(in_features), T(0), dx.data<T>(),
                                ld(in_features));
        }
        if (need_w) {  // dW = dyᵀ·x
          dw = empty({out_features, in_features}, {.dtype = xs.dtype()});
          kernels::cpu::gemm<T>(true, false, out_features, in_features, rows, T(1), dy.data<T>(),
                                ld(out_features), xs.data<T>(), ld(in_features), T(0), dw.data<T>(),
                                ld(in_features));
        }
        if (need_b) {  // db = column sums of dy
          db = zeros({out_features}, {.dtype = xs.dtype()});
          T* pdb = db.data<T>();
          const T* pdy = dy.data<T>();
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < out_features; ++j) pdb[j] += pdy[r * out_features + j];
        }
      });
      return std::vector<Tensor>{dx, dw, db};
    });
  }
  return out;
}

}  // namespace ember::nn::functional
