// index_select (one kernel pass each way: a gather of slices, and an index_add back), gather
// (one kernel pass forward; its backward index_select's at flat offsets into the input) and
// one_hot (composed, no gradient), on the CPU and on CUDA.
#include <algorithm>
#include <cstdint>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/index.h"
#include "ember/kernels/cuda/index.h"
#include "ember/kernels/index.h"

namespace ember {

using autograd::SavedTensor;

namespace {

void check_index_tensor(const Tensor& input, const Tensor& index, const char* op) {
  EMBER_CHECK(input.defined(), op, ": input is an undefined tensor");
  EMBER_CHECK(index.defined(), op, ": index is an undefined tensor");
  EMBER_CHECK(index.dtype() == kInt64, op, ": expected an int64 index, got ", dtype_name(index.dtype()));
  EMBER_CHECK(index.device() == input.device(), op, ": input is on ", input.device(), " but index is on ",
              index.device());
}

// Throws naming `op` unless every index lies in [0, size), so that a bad index is an error, never
// a read out of bounds. On the CPU one unsigned compare per index (a negative index wraps to a huge
// one), no min/max chain: for a small gather the check had cost more than the gather itself; on
// CUDA the smallest and the largest index, two reductions and a sync.
void check_index_range(const Tensor& index, int64_t size, const char* op, int64_t dim) {
  if (index.numel() == 0) return;
  int64_t bad_index = 0;
  bool in_range = true;
  if (index.device().is_cpu()) {
    const Tensor flat = index.contiguous();
    const int64_t* p = flat.data<int64_t>();
    const int64_t n = flat.numel();
    const auto limit = static_cast<uint64_t>(size);
    bool any_out = false;
    for (int64_t i = 0; i < n; ++i) any_out |= static_cast<uint64_t>(p[i]) >= limit;
    if (any_out) {
      in_range = false;
      bad_index = *std::find_if(p, p + n, [&](int64_t v) { return static_cast<uint64_t>(v) >= limit; });
    }
  } else {
    const int64_t lo = min(index).item<int64_t>(), hi = max(index).item<int64_t>();
    in_range = lo >= 0 && hi < size;
    bad_index = lo < 0 ? lo : hi;
  }
  EMBER_CHECK(in_range, op, ": index ", bad_index, " is out of range for dim ", dim, " of size ", size);
}

kernels::IndexShape index_shape(const Shape& sizes, int64_t dim, int64_t count) {
  kernels::IndexShape s{.outer = 1, .dim_size = sizes[dim], .inner = 1, .count = count};
  for (int64_t d = 0; d < dim; ++d) s.outer *= sizes[d];
  for (size_t d = dim + 1; d < sizes.size(); ++d) s.inner *= sizes[d];
  return s;
}

// The gradient of index_select: grad [outer, count, inner] summed back into zeros of the input's
// shape, the rows of skip_index left at zero.
Tensor index_select_backward(const Tensor& grad, const Tensor& index, const Shape& input_sizes, DType dtype,
                             int64_t skip_index, const kernels::IndexShape& s) {
  Tensor g = grad.to(dtype).contiguous();
  Tensor dx = zeros(input_sizes, {.dtype = dtype, .device = g.device()});
  KernelContext on(dx);
  visit_floating(dtype, "index_select", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (on.cpu()) kernels::cpu::index_add<T>(g.data<T>(), index.data<int64_t>(), dx.data<T>(), skip_index, s);
    else kernels::cuda::index_add<T>(g.data<T>(), index.data<int64_t>(), dx.data<T>(), skip_index, s, on.stream());
  });
  return dx;
}

}  // namespace

namespace detail {

Tensor index_select_skipping(const Tensor& input, int64_t dim, const Tensor& index, int64_t skip_index,
                             const char* op) {
  check_index_tensor(input, index, op);
  EMBER_CHECK(input.dim() >= 1, op, ": expected an input with at least 1 dim, got a 0-dim tensor");
  EMBER_CHECK(index.dim() <= 1, op, ": expected a 1-D (or 0-D) index, got ", index.dim(), "-D index ",
              index.sizes());
  dim = wrap_dim(dim, input.dim(), op);
  check_index_range(index, input.size(dim), op, dim);
  Tensor x = input.detach().contiguous();
  Tensor idx = index.contiguous();
  const kernels::IndexShape s = index_shape(x.sizes(), dim, idx.numel());
  Shape out_sizes = x.sizes();
  out_sizes[dim] = s.count;
  Tensor out = empty(out_sizes, {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(out);
  if (on.cpu()) {
    kernels::cpu::index_select(x.data_ptr(), idx.data<int64_t>(), out.data_ptr(), element_size(x.dtype()), s);
  } else {
    kernels::cuda::index_select(x.data_ptr(), idx.data<int64_t>(), out.data_ptr(), element_size(x.dtype()), s,
                                on.stream());
  }
  if (autograd::needs_grad({input})) {
    const Shape sizes = x.sizes();
    const DType dtype = x.dtype();
    autograd::record(op, {input}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{index_select_backward(g[0], idx, sizes, dtype, skip_index, s)};
    });
  }
  return out;
}

}  // namespace detail

Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index) {
  return detail::index_select_skipping(input, dim, index, -1, "index_select");
}

namespace {

// gather's flat offsets into the contiguous input: index * stride(dim) plus, for every other dim,
// the element's own coordinate * stride(d). Composed of int64 ops, on the index's device.
Tensor gather_offsets(const Shape& input_sizes, int64_t dim, const Tensor& index) {
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  const TensorOptions ints{.dtype = kInt64, .device = index.device()};
  Shape strides(input_sizes.size(), 1);
  for (int64_t d = ndim - 2; d >= 0; --d) strides[d] = strides[d + 1] * input_sizes[d + 1];
  const auto scalar = [&](int64_t v) { return full({}, static_cast<double>(v), ints); };
  Tensor offsets = mul(index, scalar(strides[dim]));
  for (int64_t d = 0; d < ndim; ++d) {
    if (d == dim) continue;
    Shape along(input_sizes.size(), 1);
    along[d] = index.size(d);
    offsets = add(offsets, mul(arange(static_cast<double>(index.size(d)), ints).reshape(along), scalar(strides[d])));
  }
  return offsets.reshape({-1}).contiguous();
}

}  // namespace

Tensor gather(const Tensor& input, int64_t dim, const Tensor& index) {
  check_index_tensor(input, index, "gather");
  EMBER_CHECK(index.dim() == input.dim() || (input.dim() == 0 && index.dim() <= 1), "gather: expected an index with ",
              input.dim(), " dims like the input ", input.sizes(), ", got index ", index.sizes());
  if (input.dim() == 0) return index_select(input.reshape({1}), 0, index.reshape({-1})).reshape(index.sizes());
  dim = detail::wrap_dim(dim, input.dim(), "gather");
  for (int64_t d = 0; d < input.dim(); ++d) {
    EMBER_CHECK(d == dim || index.size(d) <= input.size(d), "gather: expected index ", index.sizes(),
                " no larger than input ", input.sizes(), " outside dim ", dim, ", got ", index.size(d), " > ",
                input.size(d), " in dim ", d);
  }
  check_index_range(index, input.size(dim), "gather", dim);
  if (input.dim() > kernels::kMaxGatherDims) {  // beyond the kernel's rank: the offsets, then index_select
    return index_select(input.reshape({-1}), 0, gather_offsets(input.sizes(), dim, index)).reshape(index.sizes());
  }
  // One kernel pass forward; the backward sums into the flat input at the same offsets, in
  // index order (index_select's backward kernel), computed only when a gradient is wanted.
  Tensor x = input.detach().contiguous(), idx = index.contiguous();
  kernels::GatherShape s{.ndim = static_cast<int>(x.dim()), .dim = static_cast<int>(dim), .numel = idx.numel()};
  for (int64_t d = 0; d < x.dim(); ++d) {
    s.index_sizes[d] = idx.size(d);
    s.input_strides[d] = x.strides()[d];
  }
  Tensor out = empty(idx.sizes(), {.dtype = x.dtype(), .device = x.device()});
  KernelContext on(out);
  if (on.cpu()) {
    kernels::cpu::gather(x.data_ptr(), idx.data<int64_t>(), out.data_ptr(), element_size(x.dtype()), s);
  } else {
    kernels::cuda::gather(x.data_ptr(), idx.data<int64_t>(), out.data_ptr(), element_size(x.dtype()), s, on.stream());
  }
  if (autograd::needs_grad({input})) {
    const Shape sizes = x.sizes();
    const DType dtype = x.dtype();
    const int64_t input_numel = x.numel();
    autograd::record("gather", {input}, {&out}, [=](const std::vector<Tensor>& g) {
      const kernels::IndexShape flat{.outer = 1, .dim_size = input_numel, .inner = 1, .count = idx.numel()};
      return std::vector<Tensor>{index_select_backward(g[0], gather_offsets(sizes, dim, idx), {flat.dim_size}, dtype, -1,
                                                       flat).reshape(sizes)};
    });
  }
  return out;
}

Tensor one_hot(const Tensor& tensor, int64_t num_classes) {
  EMBER_CHECK(tensor.defined(), "one_hot: called on an undefined tensor");
  EMBER_CHECK(tensor.dtype() == kInt64, "one_hot: expected an int64 tensor of class values, got ",
              dtype_name(tensor.dtype()));
  EMBER_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 (inferred) or at least 0, got ", num_classes);
  if (tensor.numel() > 0) {
    const int64_t lo = min(tensor).item<int64_t>(), hi = max(tensor).item<int64_t>();
    EMBER_CHECK(lo >= 0, "one_hot: class values must be non-negative, got ", lo);
    if (num_classes == -1) num_classes = hi + 1;
    EMBER_CHECK(hi < num_classes, "one_hot: class values must be smaller than num_classes ", num_classes, ", got ",
                hi);
  } else {
    EMBER_CHECK(num_classes != -1, "one_hot: cannot infer num_classes from an empty tensor of shape ",
                tensor.sizes());
  }
  Tensor classes = arange(static_cast<double>(num_classes), {.dtype = kInt64, .device = tensor.device()});
  return eq(tensor.detach().unsqueeze(-1), classes).to(kInt64);
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return ember::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return ember::gather(*this, dim, index); }

}  // namespace ember
