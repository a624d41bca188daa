// Reductions over dims (sum, mean, max, min, argmax, argmin) and their gradients.
#include <algorithm>
#include <limits>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/elementwise.h"
#ifdef EMBER_WITH_CUDA
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/reduce.h"
#endif

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

#ifdef EMBER_WITH_CUDA
// a's dims split into the kept ones (outermost first: the order of a contiguous keepdim output)
// and the reduced ones, each with a's strides.
kernels::cuda::ReduceLoop reduce_loop(const Tensor& a, const Shape& dims) {
  kernels::cuda::ReduceLoop loop;
  for (int64_t d = 0; d < a.dim(); ++d) {
    kernels::cpu::StridedLoop<1>& part = contains(dims, d) ? loop.reduced : loop.kept;
    part.sizes.push_back(a.size(d));
    part.strides[0].push_back(a.stride(d));
  }
  return loop;
}

// Device scratch for a reduction kernel; undefined when it needs none.
Tensor workspace_for(size_t bytes, Device device) {
  if (bytes == 0) return Tensor();
  return empty({static_cast<int64_t>(bytes)}, {.dtype = kUInt8, .device = device});
}
#else
[[noreturn]] void no_cuda_build(const char* op) {
  throw Error(detail::str(op, ": got a CUDA tensor, but this build of ember has no CUDA support "
                          "(configured with EMBER_CUDA=OFF or without nvcc)"));
}
#endif

// sum over `dims` of a CUDA tensor, keepdim shape.
Tensor sum_cuda(const Tensor& a, const Shape& dims, DType out_dtype) {
#ifdef EMBER_WITH_CUDA
  Tensor out = empty(reduced_shape(a.sizes(), dims, true), {.dtype = out_dtype, .device = a.device()});
  kernels::cuda::ReduceLoop loop = reduce_loop(a, dims);
  int device = a.device().index();
  cuda::DeviceGuard guard(device);
  size_t bytes = kernels::cuda::sum_workspace_bytes(loop);
  Tensor workspace = workspace_for(bytes, a.device());
  kernels::cuda::sum(out.data_ptr(), static_cast<int>(out_dtype), a.data_ptr(), static_cast<int>(a.dtype()), loop,
                     workspace.defined() ? workspace.data_ptr() : nullptr, bytes, cuda::current_stream(device));
  return out;
#else
  (void)dims, (void)out_dtype;
  no_cuda_build("sum");
#endif
}

// out (keepdim shape, zeroed) += a over `dims`; reduced dims are walked innermost so each run
// accumulates in a wide register type.
Tensor sum_kernel(const Tensor& a, const Shape& dims, DType out_dtype) {
  if (a.is_cuda()) return sum_cuda(a, dims, out_dtype);
  Shape keep_shape = reduced_shape(a.sizes(), dims, true);
  Tensor out = zeros(keep_shape, {.dtype = out_dtype, .device = a.device()});
  Shape order;
  for (int64_t d = 0; d < a.dim(); ++d) if (!contains(dims, d)) order.push_back(d);
  for (int64_t d : dims) order.push_back(d);
  kernels::cpu::StridedLoop<2> loop;
  loop.strides[0].reserve(order.size());
  for (int64_t d : order) {
    loop.sizes.push_back(a.size(d));
    loop.strides[0].push_back(contains(dims, d) ? 0 : out.stride(d));
    loop.strides[1].push_back(a.stride(d));
  }
  visit_dtype(out_dtype, "sum", [&](auto out_tag) {
    using O = typename decltype(out_tag)::type;
    using Acc = std::conditional_t<std::is_floating_point_v<O>, double, int64_t>;
    visit_dtype(a.dtype(), "sum", [&](auto in_tag) {
      using I = typename decltype(in_tag)::type;
      O* po = static_cast<O*>(out.data_ptr());
      const I* pa = static_cast<const I*>(a.data_ptr());
      kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
        if (step[0] == 0) {
          Acc acc = 0;
          for (int64_t k = 0; k < n; ++k) acc += static_cast<Acc>(pa[off[1] + k * step[1]]);
          po[off[0]] = static_cast<O>(static_cast<Acc>(po[off[0]]) + acc);
        } else {
          for (int64_t k = 0; k < n; ++k) po[off[0] + k * step[0]] += static_cast<O>(pa[off[1] + k * step[1]]);
        }
      });
    });
  });
  return out;
}

// Values and int64 indices of the max (or min) along `dim`, keepdim shape. NaN wins, as in PyTorch.
std::tuple<Tensor, Tensor> extremum_kernel(const Tensor& a, int64_t dim, bool take_max, const char* op) {
  EMBER_CHECK(a.dim() == 0 || a.size(dim) > 0, op, ": cannot reduce over dim ", dim,
              " of size 0 (shape ", a.sizes(), ")");
  Shape keep_shape = reduced_shape(a.sizes(), {dim}, true);
  Tensor values = empty(keep_shape, {.dtype = a.dtype(), .device = a.device()});
  Tensor indices = empty(keep_shape, {.dtype = kInt64, .device = a.device()});
  if (a.is_cuda()) {
#ifdef EMBER_WITH_CUDA
    kernels::cuda::ReduceLoop loop = reduce_loop(a, a.dim() == 0 ? Shape{} : Shape{dim});
    int device = a.device().index();
    cuda::DeviceGuard guard(device);
    size_t bytes = kernels::cuda::extremum_workspace_bytes(loop, static_cast<int>(a.dtype()));
    Tensor workspace = workspace_for(bytes, a.device());
    kernels::cuda::extremum(take_max, values.data_ptr(), static_cast<int64_t*>(indices.data_ptr()), a.data_ptr(),
                            static_cast<int>(a.dtype()), loop, workspace.defined() ? workspace.data_ptr() : nullptr,
                            bytes, cuda::current_stream(device));
    return {values, indices};
#else
    no_cuda_build(op);
#endif
  }
  int64_t length = a.dim() == 0 ? 1 : a.size(dim);
  int64_t step_in_dim = a.dim() == 0 ? 0 : a.stride(dim);
  kernels::cpu::StridedLoop<3> loop{keep_shape, {values.strides(), indices.strides(), a.strides()}};
  if (a.dim() > 0) loop.strides[2][dim] = 0;
  visit_dtype(a.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pv = static_cast<T*>(values.data_ptr());
    int64_t* pi = static_cast<int64_t*>(indices.data_ptr());
    const T* pa = static_cast<const T*>(a.data_ptr());
    kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
      for (int64_t k = 0; k < n; ++k) {
        const T* row = pa + off[2] + k * step[2];
        T best = row[0];
        int64_t best_at = 0;
        for (int64_t j = 1; j < length && best == best; ++j) {
          T x = row[j * step_in_dim];
          if (x != x || (take_max ? x > best : x < best)) {
            best = x;
            best_at = j;
          }
        }
        pv[off[0] + k * step[0]] = best;
        pi[off[1] + k * step[1]] = best_at;
      }
    });
  });
  return {values, indices};
}

// The gradient of max / min over `dim`: g at each winner's position, zero elsewhere. On CUDA it
// is composed from ops (positions == index, then where); the CPU scatters directly.
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
      if (g_kept.is_cuda()) return std::vector<Tensor>{extremum_backward(g_kept, kept_indices, sizes, dim)};
      Tensor grad = zeros(sizes, {.dtype = g[0].dtype(), .device = g[0].device()});
      int64_t length = sizes.empty() ? 1 : sizes[dim];
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
        if (d < dim) outer *= sizes[d];
        if (d > dim) inner *= sizes[d];
      }
      Tensor dense_indices = kept_indices.contiguous();  // held: idx points into it
      const int64_t* idx = dense_indices.data<int64_t>();
      visit_floating(grad.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* pg = grad.data<T>();
        const T* src = g_kept.data<T>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i)
            pg[(o * length + idx[o * inner + i]) * inner + i] += src[o * inner + i];
      });
      return std::vector<Tensor>{grad};
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
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }

}  // namespace ember
