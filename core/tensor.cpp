// Tensor metadata, views, copies and conversions. Arithmetic lives in core/ops_*.cpp.
#include "ember/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <cstring>
#include <numeric>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/copy.h"
#include "ember/kernels/cuda/copy.h"

namespace ember {

namespace {

int64_t product(const Shape& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->offset = offset;
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

// Records the backward node of a view op: `backward` maps the view's gradient to the base's.
template <class Backward>
Tensor record_view(const Tensor& base, Tensor view, const char* op, Backward backward) {
  if (autograd::needs_grad({base})) {
    autograd::record(op, {base}, {&view}, [backward](const std::vector<Tensor>& grads) {
      return std::vector<Tensor>{backward(grads[0])};
    });
  }
  return view;
}

// The backward of a view that only regroups dims: reshape the gradient back.
Tensor record_reshape_view(const Tensor& base, Tensor view, const char* op) {
  return record_view(base, std::move(view), op,
                     [sizes = base.sizes()](const Tensor& grad) { return grad.reshape(sizes); });
}

// The backward of a view that picks a part of the base: scatter the gradient into zeros.
template <class Pick>
Tensor record_part_view(const Tensor& base, Tensor view, const char* op, Pick pick) {
  return record_view(base, std::move(view), op, [sizes = base.sizes(), pick](const Tensor& grad) {
    Tensor grad_base = zeros(sizes, {.dtype = grad.dtype(), .device = grad.device()});
    pick(grad_base).copy_(grad);
    return grad_base;
  });
}

}  // namespace

std::string shape_str(const Shape& shape) { return detail::str(shape); }

// --- Sizes -----------------------------------------------------------------------------------

// Note [Checked sizes]: the span of a contiguous layout, the product of its sizes with each 0
// counted as 1, bounds the element count and every stride; times the element size it bounds the
// byte size and every byte offset. Checking that one product for overflow checks them all, which
// also covers a shape with no elements whose other dims still overflow as strides.
ContiguousSize contiguous_size(const Shape& shape, DType dtype, std::string_view op) {
  for (int64_t s : shape) EMBER_CHECK(s >= 0, op, ": negative size in shape ", shape);
  auto too_large = [&] {
    return Error(detail::str(op, ": shape ", shape, " of ", dtype_name(dtype),
                             " is too large to address: the storage size calculation overflowed int64 (",
                             std::numeric_limits<int64_t>::max(), " bytes at most)"));
  };
  ContiguousSize out;
  out.strides.resize(shape.size());
  int64_t span = 1, numel = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    out.strides[d] = span;
    if (__builtin_mul_overflow(span, std::max<int64_t>(shape[d], 1), &span)) throw too_large();
    numel *= shape[d];  // at most span: cannot overflow
  }
  int64_t span_bytes = 0;
  if (__builtin_mul_overflow(span, static_cast<int64_t>(element_size(dtype)), &span_bytes)) throw too_large();
  out.numel = numel;
  out.nbytes = numel * static_cast<int64_t>(element_size(dtype));  // at most span_bytes
  return out;
}

// --- Metadata --------------------------------------------------------------------------------

#define EMBER_CHECK_DEFINED(op) EMBER_CHECK(defined(), op, ": called on an undefined tensor")

const Shape& Tensor::sizes() const {
  EMBER_CHECK_DEFINED("sizes");
  return impl_->sizes;
}
const Shape& Tensor::strides() const {
  EMBER_CHECK_DEFINED("strides");
  return impl_->strides;
}
int64_t Tensor::dim() const {
  EMBER_CHECK_DEFINED("dim");
  return static_cast<int64_t>(impl_->sizes.size());
}
int64_t Tensor::size(int64_t d) const { return impl_->sizes[detail::wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[detail::wrap_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const {
  EMBER_CHECK_DEFINED("numel");
  return product(impl_->sizes);
}
int64_t Tensor::storage_offset() const {
  EMBER_CHECK_DEFINED("storage_offset");
  return impl_->offset;
}
DType Tensor::dtype() const {
  EMBER_CHECK_DEFINED("dtype");
  return impl_->dtype;
}
Device Tensor::device() const {
  EMBER_CHECK_DEFINED("device");
  return impl_->storage->device();
}
const std::shared_ptr<Storage>& Tensor::storage() const {
  EMBER_CHECK_DEFINED("storage");
  return impl_->storage;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t d = impl_->sizes.size(); d-- > 0;) {
    if (impl_->sizes[d] == 1) continue;
    if (impl_->strides[d] != expected) return false;
    expected *= impl_->sizes[d];
  }
  return true;
}

void* Tensor::data_ptr() const {
  EMBER_CHECK_DEFINED("data_ptr");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * element_size(impl_->dtype);
}

template <class T>
T* Tensor::data() const {
  DType expected = dtype_of<T>();
  DType actual = dtype();
  bool bool_as_bytes = std::is_same_v<T, uint8_t> && actual == kBool;
  EMBER_CHECK(actual == expected || bool_as_bytes, "data: tensor has dtype ", dtype_name(actual),
              ", asked for ", dtype_name(expected));
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;

void* Tensor::mutable_data_ptr(const char* op) {
  EMBER_CHECK(defined(), op, ": called on an undefined tensor");
  autograd::detail::check_inplace(*this, op);
  impl_->storage->bump_version();
  return data_ptr();
}

template <class T>
T* Tensor::mutable_data(const char* op) {
  T* typed = data<T>();  // checks the dtype before anything changes
  mutable_data_ptr(op);
  return typed;
}
template float* Tensor::mutable_data<float>(const char*);
template double* Tensor::mutable_data<double>(const char*);
template int64_t* Tensor::mutable_data<int64_t>(const char*);
template uint8_t* Tensor::mutable_data<uint8_t>(const char*);

void Tensor::set_data(const Tensor& data) {
  EMBER_CHECK(defined() && data.defined(), "set_data: called with an undefined tensor");
  EMBER_CHECK(!requires_grad() || is_floating(data.dtype()), "set_data: a tensor that requires grad must hold "
              "floating data, got ", dtype_name(data.dtype()));
  impl_->storage = data.storage();
  impl_->offset = data.storage_offset();
  impl_->sizes = data.sizes();
  impl_->strides = data.strides();
  impl_->dtype = data.dtype();
}

// --- Views -----------------------------------------------------------------------------------

namespace {

// Resolves one -1 in `shape` against numel, checking the element count.
Shape infer_shape(Shape shape, int64_t numel, DType dtype, const char* op, const Shape& from) {
  int64_t infer_at = -1;
  Shape known_dims = shape;  // the -1 counted as 1
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      EMBER_CHECK(infer_at < 0, op, ": only one dimension can be -1, got ", shape);
      infer_at = static_cast<int64_t>(d);
      known_dims[d] = 1;
    } else {
      EMBER_CHECK(shape[d] >= 0, op, ": invalid size ", shape[d], " in shape ", shape);
    }
  }
  // Checked, so that a product that wraps around cannot match numel by accident; when it holds,
  // the inferred shape fits too (its element count is numel, and no dim is 0).
  const int64_t known = contiguous_size(known_dims, dtype, op).numel;
  if (infer_at >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape,
                " is invalid for a tensor of shape ", from, " (", numel, " elements)");
    shape[infer_at] = numel / known;
  } else {
    EMBER_CHECK(known == numel, op, ": shape ", shape, " is invalid for a tensor of shape ", from,
                " (", numel, " elements)");
  }
  return shape;
}

// Strides for viewing `sizes` as `shape` without a copy, or empty when impossible (the
// algorithm of PyTorch's computeStride: each run of merged old dims must be contiguous).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& shape) {
  Shape result(shape.size());
  if (sizes.empty()) {
    std::fill(result.begin(), result.end(), 1);
    return result;
  }
  if (product(sizes) == 0) return contiguous_size(shape, kUInt8, "view").strides;  // checked by infer_shape
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        result[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return result;
}

}  // namespace

Tensor Tensor::view(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), dtype(), "view", sizes());
  auto strides_for_view = view_strides(sizes(), strides(), shape);
  EMBER_CHECK(strides_for_view.has_value(), "view: the layout of a tensor of shape ", sizes(),
              " with strides ", strides(), " cannot be viewed as ", shape,
              " without a copy; use reshape() or contiguous() first");
  return record_reshape_view(*this, make_view(*this, shape, *strides_for_view, storage_offset()), "view");
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_shape(std::move(shape), numel(), dtype(), "reshape", sizes());
  if (view_strides(sizes(), strides(), shape)) return view(shape);
  return contiguous().view(shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = detail::wrap_dim(start_dim, dim(), "flatten");
  end_dim = detail::wrap_dim(end_dim, dim(), "flatten");
  EMBER_CHECK(start_dim <= end_dim, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged *= size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::squeeze() const {
  Shape shape, new_strides;
  for (int64_t d = 0; d < dim(); ++d) {
    if (size(d) != 1) {
      shape.push_back(size(d));
      new_strides.push_back(stride(d));
    }
  }
  return record_reshape_view(*this, make_view(*this, shape, new_strides, storage_offset()), "squeeze");
}

Tensor Tensor::squeeze(int64_t d) const {
  d = detail::wrap_dim(d, dim(), "squeeze");
  if (size(d) != 1) return *this;
  Shape shape = sizes(), new_strides = strides();
  shape.erase(shape.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return record_reshape_view(*this, make_view(*this, shape, new_strides, storage_offset()), "squeeze");
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = detail::wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = sizes(), new_strides = strides();
  int64_t stride_here = d < dim() ? stride(d) * size(d) : 1;
  shape.insert(shape.begin() + d, 1);
  new_strides.insert(new_strides.begin() + d, stride_here);
  return record_reshape_view(*this, make_view(*this, shape, new_strides, storage_offset()), "unsqueeze");
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  dim0 = detail::wrap_dim(dim0, dim(), "transpose");
  dim1 = detail::wrap_dim(dim1, dim(), "transpose");
  Shape shape = sizes(), new_strides = strides();
  std::swap(shape[dim0], shape[dim1]);
  std::swap(new_strides[dim0], new_strides[dim1]);
  return record_view(*this, make_view(*this, shape, new_strides, storage_offset()), "transpose",
                     [dim0, dim1](const Tensor& grad) { return grad.transpose(dim0, dim1); });
}

Tensor Tensor::t() const {
  EMBER_CHECK(dim() == 2, "t: expected a 2-D tensor, got ", dim(), "-D ", sizes());
  return transpose(0, 1);
}

Tensor Tensor::permute(Shape dims) const {
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: expected ", dim(),
              " dims for a tensor of shape ", sizes(), ", got ", dims);
  Shape shape(dims.size()), new_strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = detail::wrap_dim(dims[i], dim(), "permute");
    EMBER_CHECK(!seen[d], "permute: dim ", d, " repeated in ", dims);
    seen[d] = true;
    shape[i] = size(d);
    new_strides[i] = stride(d);
    inverse[d] = static_cast<int64_t>(i);
  }
  return record_view(*this, make_view(*this, shape, new_strides, storage_offset()), "permute",
                     [inverse](const Tensor& grad) { return grad.permute(inverse); });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = detail::wrap_dim(d, dim(), "narrow");
  if (start < 0) start += size(d);
  EMBER_CHECK(start >= 0 && length >= 0 && start + length <= size(d), "narrow: range [", start,
              ", ", start + length, ") is out of bounds for dim ", d, " of size ", size(d));
  Shape shape = sizes();
  shape[d] = length;
  return record_part_view(*this, make_view(*this, shape, strides(), storage_offset() + start * stride(d)),
                          "narrow", [=](const Tensor& g) { return g.narrow(d, start, length); });
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = detail::wrap_dim(d, dim(), "select");
  int64_t n = size(d);
  EMBER_CHECK(index >= -n && index < n, "select: index ", index, " is out of bounds for dim ", d,
              " of size ", n);
  if (index < 0) index += n;
  Shape shape = sizes(), new_strides = strides();
  int64_t offset = storage_offset() + index * stride(d);
  shape.erase(shape.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return record_part_view(*this, make_view(*this, shape, new_strides, offset), "select",
                          [=](const Tensor& g) { return g.select(d, index); });
}

Tensor Tensor::expand(Shape shape) const {
  EMBER_CHECK(static_cast<int64_t>(shape.size()) >= dim(), "expand: the target shape ", shape,
              " has fewer dims than the tensor's ", sizes());
  size_t lead = shape.size() - static_cast<size_t>(dim());
  Shape new_strides(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead) {
      EMBER_CHECK(shape[d] >= 0, "expand: size -1 is not allowed for a new leading dim, got ", shape);
      new_strides[d] = 0;
      continue;
    }
    int64_t own = size(static_cast<int64_t>(d - lead));
    if (shape[d] == -1) shape[d] = own;
    if (own == shape[d]) {
      new_strides[d] = stride(static_cast<int64_t>(d - lead));
    } else {
      EMBER_CHECK(own == 1, "expand: the size ", own, " of dim ", d - lead,
                  " must be 1 to expand to ", shape[d], " (tensor ", sizes(), " to ", shape, ")");
      new_strides[d] = 0;
    }
  }
  contiguous_size(shape, dtype(), "expand");  // the view's element count must fit int64 too
  return record_view(*this, make_view(*this, shape, new_strides, storage_offset()), "expand",
                     [sizes = sizes()](const Tensor& grad) { return sum_to(grad, sizes); });
}

// --- Copies ----------------------------------------------------------------------------------

namespace {

// dst[...] = cast(src[...]) for tensors of the same shape (src already broadcast) on one device.
void copy_on_device(const Tensor& dst, const Tensor& src) {
  kernels::StridedLoop<2> loop{dst.sizes(), {dst.strides(), src.strides()}};
  KernelContext on(dst);
  const int dst_dtype = static_cast<int>(dst.dtype()), src_dtype = static_cast<int>(src.dtype());
  if (on.cpu()) kernels::cpu::copy_cast(dst.data_ptr(), dst_dtype, src.data_ptr(), src_dtype, loop);
  else kernels::cuda::copy_cast(dst.data_ptr(), dst_dtype, src.data_ptr(), src_dtype, loop, on.stream());
}

bool same_dense_layout(const Tensor& a, const Tensor& b) {
  return a.is_contiguous() && b.is_contiguous() && a.dtype() == b.dtype() && a.sizes() == b.sizes();
}

// Copies between devices or on one GPU. Cross-device copies stage through a contiguous tensor
// of the destination's dtype so that only dense bytes cross the bus.
void copy_with_cuda(const Tensor& dst, const Tensor& src) {
  if (dst.device() == src.device()) {
    copy_on_device(dst, src);
    return;
  }
  if (same_dense_layout(dst, src)) {
    if (dst.is_cuda() && src.is_cuda()) {
      cuda::detail::copy_device_to_device(dst.data_ptr(), dst.device().index(), src.data_ptr(),
                                          src.device().index(), dst.nbytes());
    } else if (dst.is_cuda()) {
      cuda::detail::copy_host_to_device(dst.data_ptr(), src.data_ptr(), dst.nbytes(), dst.device().index());
    } else {
      cuda::detail::copy_device_to_host(dst.data_ptr(), src.data_ptr(), dst.nbytes(), src.device().index());
    }
    return;
  }
  // Make the source dense in the destination's dtype on its own device, move it, then place it.
  Tensor dense_src = src.is_contiguous() && src.dtype() == dst.dtype() ? src : empty(src.sizes(), {.dtype = dst.dtype(), .device = src.device()}).copy_(src);
  if (dst.is_contiguous()) {
    copy_with_cuda(dst, dense_src);
    return;
  }
  Tensor dense_dst = empty(dst.sizes(), {.dtype = dst.dtype(), .device = dst.device()});
  copy_with_cuda(dense_dst, dense_src);
  copy_with_cuda(dst, dense_dst);
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src) {
  EMBER_CHECK(defined() && src.defined(), "copy_: called with an undefined tensor");
  autograd::detail::check_inplace(*this, "copy_");
  Tensor source = src.sizes() == sizes() ? src : src.expand(sizes());
  if (numel() > 0) {
    if (device().is_cpu() && source.device().is_cpu()) {
      copy_on_device(*this, source);
    } else {
      copy_with_cuda(*this, source);
    }
  }
  storage()->bump_version();
  return *this;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), {.dtype = dtype(), .device = device()});
  {
    NoGradGuard no_grad;
    out.copy_(*this);
  }
  if (autograd::needs_grad({*this})) {
    autograd::record("clone", {*this}, {&out},
                     [](const std::vector<Tensor>& grads) { return std::vector<Tensor>{grads[0]}; });
  }
  return out;
}

Tensor Tensor::to(Device target, DType target_dtype) const {
  if (target == device() && target_dtype == dtype()) return *this;
  Tensor out = empty(sizes(), {.dtype = target_dtype, .device = target});
  {
    NoGradGuard no_grad;
    out.copy_(*this);
  }
  if (autograd::needs_grad({*this}) && is_floating(target_dtype)) {
    Device source_device = device();
    DType source_dtype = dtype();
    autograd::record("to", {*this}, {&out}, [=](const std::vector<Tensor>& grads) {
      return std::vector<Tensor>{grads[0].to(source_device, source_dtype)};
    });
  }
  return out;
}
Tensor Tensor::pin_memory() const {
  EMBER_CHECK(device().is_cpu(), "pin_memory: expected a CPU tensor, got one on ", device());
  if (is_pinned()) return *this;
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate_pinned(nbytes());
  impl->sizes = sizes();
  impl->strides = contiguous_size(sizes(), dtype(), "pin_memory").strides;
  impl->dtype = dtype();
  Tensor out(std::move(impl));
  NoGradGuard no_grad;
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device target) const { return to(target, dtype()); }
Tensor Tensor::to(DType target_dtype) const { return to(device(), target_dtype); }

template <class T>
T Tensor::item() const {
  EMBER_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ", sizes(), " (",
              numel(), " elements)");
  Tensor one = to(Device::cpu(), dtype_of<T>());
  return *static_cast<const T*>(one.data_ptr());
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template uint8_t Tensor::item<uint8_t>() const;
template bool Tensor::item<bool>() const;

template <class T>
T Tensor::at(std::initializer_list<int64_t> index) const {
  EMBER_CHECK(static_cast<int64_t>(index.size()) == dim(), "at: expected ", dim(),
              " indices for a tensor of shape ", sizes(), ", got ", index.size());
  Tensor element = *this;
  NoGradGuard no_grad;
  for (int64_t i : index) element = element.select(0, i);
  return element.item<T>();
}
template float Tensor::at<float>(std::initializer_list<int64_t>) const;
template double Tensor::at<double>(std::initializer_list<int64_t>) const;
template int64_t Tensor::at<int64_t>(std::initializer_list<int64_t>) const;
template uint8_t Tensor::at<uint8_t>(std::initializer_list<int64_t>) const;
template bool Tensor::at<bool>(std::initializer_list<int64_t>) const;

// --- Factories -------------------------------------------------------------------------------

Tensor empty(Shape shape, TensorOptions options) {
  ContiguousSize size = contiguous_size(shape, options.dtype, "empty");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::allocate(static_cast<size_t>(size.nbytes), options.device);
  impl->strides = std::move(size.strides);
  impl->sizes = std::move(shape);
  impl->dtype = options.dtype;
  Tensor out(std::move(impl));
  if (options.requires_grad) out.requires_grad_();
  return out;
}

Tensor full(Shape shape, double value, TensorOptions options) {
  bool requires_grad = options.requires_grad;
  options.requires_grad = false;
  Tensor out = empty(std::move(shape), options);
  out.fill_(value);
  if (requires_grad) out.requires_grad_();
  return out;
}
Tensor zeros(Shape shape, TensorOptions options) { return full(std::move(shape), 0.0, options); }
Tensor ones(Shape shape, TensorOptions options) { return full(std::move(shape), 1.0, options); }
Tensor empty_like(const Tensor& like) { return empty(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }
Tensor zeros_like(const Tensor& like) { return zeros(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }
Tensor ones_like(const Tensor& like) { return ones(like.sizes(), {.dtype = like.dtype(), .device = like.device()}); }

Tensor arange(double end, TensorOptions options) { return arange(0.0, end, 1.0, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  EMBER_CHECK(step != 0, "arange: step must be nonzero");
  EMBER_CHECK((end - start) / step >= 0, "arange: the range [", start, ", ", end,
              ") is empty in the direction of step ", step);
  const double steps = std::ceil((end - start) / step);
  // Converting a double beyond int64 (or infinity) is undefined; past 2^63 it cannot be allocated anyway.
  EMBER_CHECK(steps < 0x1p63, "arange: the range [", start, ", ", end, ") in steps of ", step, " has ", steps,
              " elements, more than int64 can count");
  const auto count = static_cast<int64_t>(steps);
  Tensor host = empty({count}, {.dtype = options.dtype});
  visit_dtype(options.dtype, "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = host.data<T>();
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  Tensor out = host.to(options.device);
  if (options.requires_grad) out.requires_grad_();
  return out;
}

template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options) {
  Tensor host = empty({static_cast<int64_t>(values.size())}, {.dtype = dtype_of<T>()});
  if (!values.empty()) std::memcpy(host.data_ptr(), values.data(), values.size() * sizeof(T));
  Tensor out = host.to(options.device, options.dtype);
  if (options.requires_grad) out.requires_grad_();
  return out;
}
template Tensor tensor(const std::vector<float>&, TensorOptions);
template Tensor tensor(const std::vector<double>&, TensorOptions);
template Tensor tensor(const std::vector<int64_t>&, TensorOptions);
template Tensor tensor(const std::vector<uint8_t>&, TensorOptions);

Tensor from_blob(void* data, Shape shape, TensorOptions options, std::function<void(void*)> deleter) {
  ContiguousSize size = contiguous_size(shape, options.dtype, "from_blob");
  EMBER_CHECK(data != nullptr || size.numel == 0, "from_blob: data is null");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::wrap(data, static_cast<size_t>(size.nbytes), options.device, std::move(deleter));
  impl->strides = std::move(size.strides);
  impl->sizes = std::move(shape);
  impl->dtype = options.dtype;
  Tensor out(std::move(impl));
  if (options.requires_grad) out.requires_grad_();
  return out;
}

}  // namespace ember
