// matmul: 1-D, 2-D and batched 3-D products on ember's GEMM kernels (CPU, CUDA hand-written or
// cuBLAS by ember::backend()), and its gradient.
#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/gemm.h"
#include "ember/kernels/cuda/gemm.h"
#include "ember/kernels/vendor/cublas_gemm.h"

namespace ember {

using autograd::SavedTensor;

namespace {

// How a 2-D strided matrix reaches gemm without a copy: row-major with leading dim `ld`, or
// transposed (column-major storage). `needs_copy` when neither stride is 1.
struct GemmOperand {
  bool transposed = false;
  int64_t ld = 1;
  bool needs_copy = false;
};

GemmOperand gemm_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (rows == 1) row_stride = cols;  // the stride of a size-1 dim is never used
  if (cols == 1) col_stride = 1;
  if (col_stride == 1 && row_stride >= cols) return {false, std::max<int64_t>(row_stride, 1), false};
  if (row_stride == 1 && col_stride >= rows) return {true, std::max<int64_t>(col_stride, 1), false};
  return {false, std::max<int64_t>(cols, 1), true};
}

// out[b] = a[b] @ b[b] for 3-D operands of the same batch (batch stride 0 broadcasts), on the
// kernels of `backend` for a CUDA tensor.
Tensor batched_product(const Tensor& a, const Tensor& b, Backend backend) {
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  Tensor x = a, y = b;
  GemmOperand ga = gemm_operand(m, k, x.stride(1), x.stride(2));
  if (ga.needs_copy) { x = x.contiguous(); ga = gemm_operand(m, k, x.stride(1), x.stride(2)); }
  GemmOperand gb = gemm_operand(k, n, y.stride(1), y.stride(2));
  if (gb.needs_copy) { y = y.contiguous(); gb = gemm_operand(k, n, y.stride(1), y.stride(2)); }
  Tensor out = empty({batch, m, n}, {.dtype = a.dtype(), .device = a.device()});
  KernelContext on(out, backend);
  visit_floating(a.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // One call for the whole batch; a broadcast operand has batch stride 0.
    const T* px = static_cast<const T*>(x.data_ptr());
    const T* py = static_cast<const T*>(y.data_ptr());
    T* po = out.data<T>();
    const int64_t ldc = std::max<int64_t>(n, 1);
    if (on.cpu()) {
      kernels::cpu::gemm_batched<T>(ga.transposed, gb.transposed, m, n, k, T(1), px, ga.ld, x.stride(0), py, gb.ld,
                                    y.stride(0), T(0), po, ldc, m * n, batch);
    } else if (on.vendor()) {
      kernels::vendor::gemm_batched<T>(ga.transposed, gb.transposed, m, n, k, T(1), px, ga.ld, x.stride(0), py,
                                       gb.ld, y.stride(0), T(0), po, ldc, m * n, batch, on.stream());
    } else {
      kernels::cuda::gemm_batched<T>(ga.transposed, gb.transposed, m, n, k, T(1), px, ga.ld, x.stride(0), py, gb.ld,
                                     y.stride(0), T(0), po, ldc, m * n, batch, on.stream());
    }
  });
  return out;
}

// matmul on `backend`'s kernels; its backward runs on the same backend.
Tensor matmul_on(const Tensor& a, const Tensor& b, Backend backend) {
  EMBER_CHECK(a.defined() && b.defined(), "matmul: called with an undefined tensor");
  EMBER_CHECK(a.device() == b.device(), "matmul: expected both tensors on the same device, got ",
              a.device(), " and ", b.device());
  EMBER_CHECK(a.dim() >= 1 && a.dim() <= 3 && b.dim() >= 1 && b.dim() <= 3,
              "matmul: expected 1-D, 2-D or 3-D tensors, got shapes ", a.sizes(), " and ", b.sizes());
  EMBER_CHECK(a.dtype() == b.dtype(), "matmul: expected tensors of the same dtype, got ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  // Vectors become matrices through views, so autograd handles them through the view ops.
  if (a.dim() == 1 && b.dim() == 1) return matmul_on(a.unsqueeze(0), b.unsqueeze(1), backend).reshape({});
  if (a.dim() == 1) return matmul_on(a.unsqueeze(0), b, backend).squeeze(-2);
  if (b.dim() == 1) return matmul_on(a, b.unsqueeze(1), backend).squeeze(-1);
  EMBER_CHECK(a.size(-1) == b.size(-2), "matmul: shapes ", a.sizes(), " and ", b.sizes(),
              " cannot be multiplied (", a.size(-1), " != ", b.size(-2), ")");
  int64_t batch = std::max(a.dim() == 3 ? a.size(0) : 1, b.dim() == 3 ? b.size(0) : 1);
  EMBER_CHECK((a.dim() < 3 || a.size(0) == batch || a.size(0) == 1) &&
              (b.dim() < 3 || b.size(0) == batch || b.size(0) == 1),
              "matmul: batch sizes of ", a.sizes(), " and ", b.sizes(), " cannot be broadcast");
  Tensor x = a.detach(), y = b.detach();
  x = (x.dim() == 2 ? x.unsqueeze(0) : x).expand({batch, a.size(-2), a.size(-1)});
  y = (y.dim() == 2 ? y.unsqueeze(0) : y).expand({batch, b.size(-2), b.size(-1)});
  Tensor out = batched_product(x, y, backend);
  if (a.dim() == 2 && b.dim() == 2) out = out.squeeze(0);
  if (autograd::needs_grad({a, b})) {
    SavedTensor saved_a(a), saved_b(b);
    bool need_a = a.requires_grad(), need_b = b.requires_grad();
    autograd::record("matmul", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor p = saved_a.unpack("matmul"), q = saved_b.unpack("matmul");
      Tensor ga, gb;
      if (need_a) ga = sum_to(matmul_on(g[0], q.transpose(-1, -2), backend), p.sizes());
      if (need_b && p.dim() == 3 && q.dim() == 2) {
        // 3-D @ 2-D: the weight's gradient sums p[i]^T g[i] over the batch, which is one 2-D
        // product of the batch-flattened operands (no per-batch products, no reduction).
        gb = matmul_on(p.reshape({-1, p.size(-1)}).transpose(0, 1), g[0].reshape({-1, g[0].size(-1)}), backend);
      } else if (need_b) {
        gb = sum_to(matmul_on(p.transpose(-1, -2), g[0], backend), q.sizes());
      }
      return std::vector<Tensor>{ga, gb};
    });
  }
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_on(a, b, backend()); }

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }

}  // namespace ember
