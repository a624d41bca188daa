// Reductions over dims (sum, mean, var, std, max, min, argmax, argmin) and their gradients.
#include <algorithm>
#include <limits>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/reduce.h"
#include "ember/kernels/cuda/reduce.h"

namespace ember {

using autograd::SavedTensor;

namespace {

// Sorted, unique, wrapped dims; every dim when `dims` is empty.
Shape normalize_dims(const Shape& dims, int64_t ndim, const char* op) {
  Shape out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(detail::wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  EMBER_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), op, ": dim repeated in ", dims);
  return out;
}

bool contains(const Shape& dims, int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); }

Shape reduced_shape(const Shape& sizes, const Shape& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (!contains(dims, d)) out.push_back(sizes[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// The gradient of a reduction, broadcast back over the reduced dims of `sizes`.
Tensor expand_reduced(const Tensor& grad, const Shape& sizes, const Shape& dims, bool keepdim) {
  Tensor g = grad;
  if (!keepdim) {
    for (int64_t d : dims) g = g.unsqueeze(d);
  }
  return g.expand(sizes);
}

void check_defined(const Tensor& a, const char* op) {
  EMBER_CHECK(a.defined(), op, ": called on an undefined tensor");
}

// a's dims split into the kept ones (outermost first: the order of a contiguous keepdim output)
// and the reduced ones, each with a's strides.
kernels::ReduceLoop reduce_loop(const Tensor& a, const Shape& dims) {
  kernels::ReduceLoop loop;
  for (int64_t d = 0; d < a.dim(); ++d) {
    kernels::StridedLoop<1>& part = contains(dims, d) ? loop.reduced : loop.kept;
    part.sizes.push_back(a.size(d));
    part.strides[0].push_back(a.stride(d));
  }
  return loop;
}

// sum over `dims`, keepdim shape; float sums accumulate in double, integer sums in int64.
Tensor sum_kernel(const Tensor& a, const Shape& dims, DType out_dtype) {
  Tensor out = empty(reduced_shape(a.sizes(), dims, true), {.dtype = out_dtype, .device = a.device()});
  kernels::ReduceLoop loop = reduce_loop(a, dims);
  KernelContext on(a);
  const int in_dtype = static_cast<int>(a.dtype());
  if (on.cpu()) {
    kernels::cpu::sum(out.data_ptr(), static_cast<int>(out_dtype), a.data_ptr(), in_dtype, loop);
  } else {
    size_t bytes = kernels::cuda::sum_workspace_bytes(loop);
    kernels::cuda::sum(out.data_ptr(), static_cast<int>(out_dtype), a.data_ptr(), in_dtype, loop,
                       on.workspace_bytes(static_cast<int64_t>(bytes)), bytes, on.stream());
  }
  return out;
}

// Values and int64 indices of the max (or min) along `dim`, keepdim shape. NaN wins, as in PyTorch.
std::tuple<Tensor, Tensor> extremum_kernel(const Tensor& a, int64_t dim, bool take_max, const char* op) {
  EMBER_CHECK(a.dim() == 0 || a.size(dim) > 0, op, ": cannot reduce over dim ", dim,
              " of size 0 (shape ", a.sizes(), ")");
  Shape keep_shape = reduced_shape(a.sizes(), {dim}, true);
  Tensor values = empty(keep_shape, {.dtype = a.dtype(), .device = a.device()});
  Tensor indices = empty(keep_shape, {.dtype = kInt64, .device = a.device()});
  kernels::ReduceLoop loop = reduce_loop(a, a.dim() == 0 ? Shape{} : Shape{dim});
  KernelContext on(a);
  const int dtype = static_cast<int>(a.dtype());
  auto* pi = static_cast<int64_t*>(indices.data_ptr());
  if (on.cpu()) {
    kernels::cpu::extremum(take_max, values.data_ptr(), pi, a.data_ptr(), dtype, loop);
  } else {
    size_t bytes = kernels::cuda::extremum_workspace_bytes(loop, dtype);
    kernels::cuda::extremum(take_max, values.data_ptr(), pi, a.data_ptr(), dtype, loop,
                            on.workspace_bytes(static_cast<int64_t>(bytes)), bytes, on.stream());
  }
  return {values, indices};
}

// The gradient of max / min over `dim`: g at each winner's position, zero elsewhere, composed
// from ops (positions == index, then where) on both devices.
Tensor extremum_backward(const Tensor& g_kept, const Tensor& kept_indices, const Shape& sizes, int64_t dim) {
  int64_t length = sizes.empty() ? 1 : sizes[dim];
  Shape position_shape(sizes.size(), 1);
  if (!sizes.empty()) position_shape[dim] = length;
  Tensor positions = arange(static_cast<double>(length), {.dtype = kInt64, .device = g_kept.device()}).reshape(position_shape);
  Tensor zero = zeros({}, {.dtype = g_kept.dtype(), .device = g_kept.device()});
  return where(eq(positions, kept_indices), g_kept, zero);  // broadcasts to `sizes`
}

std::tuple<Tensor, Tensor> extremum_dim(const Tensor& a, int64_t dim, bool keepdim, bool take_max, const char* op) {
  check_defined(a, op);
  dim = detail::wrap_dim(dim, a.dim(), op);
  auto [values, indices] = extremum_kernel(a.detach(), dim, take_max, op);
  if (!keepdim && a.dim() > 0) {
    values = values.squeeze(dim);
    indices = indices.squeeze(dim);
  }
  if (autograd::needs_grad({a})) {
    Shape sizes = a.sizes();
    Tensor kept_indices = keepdim || a.dim() == 0 ? indices : indices.unsqueeze(dim);
    autograd::record(op, {a}, {&values}, [=](const std::vector<Tensor>& g) {
      // Scatter each gradient to the position its value came from.
      Tensor g_kept = keepdim || sizes.empty() ? g[0].contiguous() : g[0].unsqueeze(dim).contiguous();
      return std::vector<Tensor>{extremum_backward(g_kept, kept_indices, sizes, dim)};
    });
  }
  return {values, indices};
}

// max() / min() of every element; the gradient is shared evenly between ties (as PyTorch).
Tensor extremum_all(const Tensor& a, bool take_max, const char* op) {
  check_defined(a, op);
  EMBER_CHECK(a.numel() > 0, op, ": cannot reduce an empty tensor of shape ", a.sizes());
  Tensor flat = a.detach().reshape({-1});
  Tensor value = std::get<0>(extremum_kernel(flat, 0, take_max, op)).reshape({});
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a), saved_value(value);
    autograd::record(op, {a}, {&value}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack(op);
      Tensor mask = eq(x, saved_value.unpack(op)).to(x.dtype());
      return std::vector<Tensor>{mul(div(mask, sum(mask)), g[0])};
    });
  }
  return value;
}

}  // namespace

Tensor sum(const Tensor& a, Shape dims, bool keepdim) {
  check_defined(a, "sum");
  Shape reduce = normalize_dims(dims, a.dim(), "sum");
  DType out_dtype = is_floating(a.dtype()) ? a.dtype() : kInt64;
  Tensor out = sum_kernel(a.detach(), reduce, out_dtype).reshape(reduced_shape(a.sizes(), reduce, keepdim));
  out = out.detach();
  if (autograd::needs_grad({a})) {
    Shape sizes = a.sizes();
    autograd::record("sum", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{expand_reduced(g[0], sizes, reduce, keepdim)};
    });
  }
  return out;
}

Tensor mean(const Tensor& a, Shape dims, bool keepdim) {
  EMBER_CHECK(a.defined() && is_floating(a.dtype()), "mean: expected a floating-point tensor, got ",
              a.defined() ? dtype_name(a.dtype()) : "an undefined tensor");
  Shape reduce = normalize_dims(dims, a.dim(), "mean");
  int64_t count = 1;
  for (int64_t d : reduce) count *= a.size(d);
  return div(sum(a, reduce, keepdim), static_cast<double>(count));
}

Tensor var(const Tensor& a, Shape dims, bool unbiased, bool keepdim) {
  EMBER_CHECK(a.defined() && is_floating(a.dtype()), "var: expected a floating-point tensor, got ",
              a.defined() ? dtype_name(a.dtype()) : "an undefined tensor");
  Shape reduce = normalize_dims(dims, a.dim(), "var");
  int64_t count = 1;
  for (int64_t d : reduce) count *= a.size(d);
  // N - 1 may be 0 (one element): the division then gives inf or NaN, as torch.var does.
  const double divisor = static_cast<double>(count - (unbiased ? 1 : 0));
  Tensor x = a.detach();
  Tensor deviation;
  Tensor out;
  {
    NoGradGuard no_grad;
    deviation = sub(x, mean(x, reduce, true));  // two passes: no cancellation in the squares
    out = div(sum(mul(deviation, deviation), reduce, keepdim), divisor);
  }
  if (autograd::needs_grad({a})) {
    Shape sizes = a.sizes();
    SavedTensor saved_deviation(deviation);
    autograd::record("var", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      // d var / d x_i = 2 (x_i - mean) / divisor; the mean's own dependence on x_i cancels.
      Tensor spread = expand_reduced(g[0], sizes, reduce, keepdim);
      return std::vector<Tensor>{mul(spread, mul(saved_deviation.unpack("var"), 2.0 / divisor))};
    });
  }
  return out;
}

Tensor std(const Tensor& a, Shape dims, bool unbiased, bool keepdim) {
  EMBER_CHECK(a.defined() && is_floating(a.dtype()), "std: expected a floating-point tensor, got ",
              a.defined() ? dtype_name(a.dtype()) : "an undefined tensor");
  return sqrt(var(a, std::move(dims), unbiased, keepdim));
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  EMBER_CHECK(lead >= 0, "sum_to: cannot reduce shape ", grad.sizes(), " to ", shape);
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  if (dims.empty()) return grad.reshape(shape);
  return sum(grad, dims, true).reshape(shape);
}

Tensor max(const Tensor& a) { return extremum_all(a, true, "max"); }
Tensor min(const Tensor& a) { return extremum_all(a, false, "min"); }
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) {
  return extremum_dim(a, dim, keepdim, true, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) {
  return extremum_dim(a, dim, keepdim, false, "min");
}
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return std::get<1>(max(a, dim, keepdim));
}
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return std::get<1>(min(a, dim, keepdim));
}

Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(Shape dims, bool keepdim) const { return ember::sum(*this, std::move(dims), keepdim); }
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(Shape dims, bool keepdim) const { return ember::mean(*this, std::move(dims), keepdim); }
Tensor Tensor::var(Shape dims, bool unbiased, bool keepdim) const {
  return ember::var(*this, std::move(dims), unbiased, keepdim);
}
Tensor Tensor::std(Shape dims, bool unbiased, bool keepdim) const {
  return ember::std(*this, std::move(dims), unbiased, keepdim);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }

}  // namespace ember
