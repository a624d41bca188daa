// The tensor: a cheap shared handle to sizes, strides and an offset over a Storage.
// defines: ember::Shape, ember::TensorOptions, ember::TensorImpl, ember::Tensor, ember::contiguous_size
//
// Note [Tensor handles]: copying a Tensor copies a pointer, like torch::Tensor: `Tensor b = a;`
// aliases a, and in-place ops on b are visible through a. Views (view, transpose, narrow, ...)
// share the Storage and differ only in sizes / strides / offset. clone() makes an independent copy.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/storage.h"

namespace ember {

using Shape = std::vector<int64_t>;

class Tensor;
class Node;

// What factories create: ember::zeros({2, 3}, {.dtype = kFloat64, .device = Device::cuda(0)}).
struct TensorOptions {
  DType dtype = kFloat32;
  Device device = Device::cpu();
  bool requires_grad = false;
};

// Autograd's part of a tensor, created the first time a tensor takes part in autograd.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<struct TensorImpl> grad;  // the accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;            // the node that produced this (non-leaf) tensor
  uint32_t output_nr = 0;                   // which output of grad_fn this tensor is
  std::weak_ptr<Node> grad_accumulator;     // a leaf's AccumulateGrad node, while a graph uses it
  // A leaf's grad-ready hooks with the handles register_grad_ready_hook returned for them.
  std::vector<std::pair<int64_t, std::function<void(const Tensor&)>>> grad_ready_hooks;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Shape strides;  // in elements
  DType dtype = kFloat32;
  std::unique_ptr<AutogradMeta> autograd;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false, every other call throws
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // True when both handles refer to the same tensor object (not merely equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // --- Metadata -------------------------------------------------------------------------------
  const Shape& sizes() const;
  const Shape& strides() const;
  Shape shape() const { return sizes(); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const;
  int64_t numel() const;
  int64_t storage_offset() const;
  DType dtype() const;
  Device device() const;
  bool is_contiguous() const;
  bool is_cuda() const { return device().is_cuda(); }
  const std::shared_ptr<Storage>& storage() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }

  // Pointer to the first element (storage data + offset). data<T>() checks that T matches dtype.
  void* data_ptr() const;
  template <class T>
  T* data() const;
  // The in-place write path, for code that writes this tensor's elements through a pointer
  // outside an op (an optimizer step, a gradient all-reduce): checks the write as an in-place op
  // does (`op` names the writer in the error) and bumps the version, so that a tensor saved for
  // a backward pass refuses to unpack once its data changed. Call it before the write.
  template <class T>
  T* mutable_data(const char* op);
  void* mutable_data_ptr(const char* op);

  // --- Views: share storage ---------------------------------------------------------------
  // view needs a layout that allows it (throws naming the shape otherwise); reshape copies then.
  // One size may be -1 (inferred).
  Tensor view(Shape shape) const;
  Tensor reshape(Shape shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor permute(Shape dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(Shape shape) const;  // -1 keeps a size; only size-1 dims grow (stride 0)
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }

  // --- Copies and conversion ----------------------------------------------------------------
  Tensor contiguous() const;  // this when already contiguous, else a contiguous copy
  Tensor clone() const;
  // Copies src into this (broadcasting src, casting dtype, across devices). Returns *this.
  Tensor& copy_(const Tensor& src);
  Tensor to(Device device) const;  // this when already there
  Tensor to(DType dtype) const;    // this when already that dtype
  Tensor to(Device device, DType dtype) const;
  Tensor cpu() const { return to(Device::cpu()); }
  // A copy of this CPU tensor in page-locked memory (this when already pinned). Needs a GPU.
  // Copies out of pinned memory to a GPU run asynchronously on the current stream (the next
  // batch loads while this one trains); freeing the pinned tensor waits for them, but writing
  // into it before cuda::synchronize() races with the copy, as in PyTorch's non_blocking=True.
  Tensor pin_memory() const;
  bool is_pinned() const { return storage()->is_pinned(); }
  Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }

  // The single element of a one-element tensor, converted to T (copied from the GPU if needed).
  template <class T>
  T item() const;
  // The element at a full index, for tests and small programs (CPU or CUDA; slow).
  template <class T>
  T at(std::initializer_list<int64_t> index) const;

  // --- In-place --------------------------------------------------------------------------
  // Makes this tensor hold `data`'s storage, layout, dtype and device, keeping this handle and
  // its autograd identity (requires_grad, grad, hooks), as PyTorch's Tensor::set_data: what
  // Module::to does to each parameter, so that the handles an optimizer holds stay valid.
  void set_data(const Tensor& data);
  Tensor& fill_(double value);
  Tensor& zero_() { return fill_(0.0); }
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(double value);

  // --- Autograd (core/autograd.h has the engine) --------------------------------------------
  bool requires_grad() const;
  // Marks a leaf as needing a gradient. Only floating tensors can require grad.
  Tensor& requires_grad_(bool requires_grad = true);
  bool is_leaf() const;  // no grad_fn: created by the user, or by ops that need no gradient
  Tensor grad() const;   // undefined until a backward pass reaches this leaf
  void set_grad(const Tensor& grad);
  const std::shared_ptr<Node>& grad_fn() const;
  // A view of the same data that is not part of any graph.
  Tensor detach() const;
  // Runs backward from this tensor. `gradient` may be omitted for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // Calls hook(this) every time a backward pass has finished accumulating this leaf's gradient,
  // in registration order. Requires a leaf that requires grad. Returns a handle for
  // remove_grad_ready_hook (like PyTorch's RemovableHandle).
  int64_t register_grad_ready_hook(std::function<void(const Tensor&)> hook) const;
  // Removes the hook `handle` names from this tensor; an unknown or already removed handle does
  // nothing.
  void remove_grad_ready_hook(int64_t handle) const;

  // --- Arithmetic sugar (core/ops.h has the ops) --------------------------------------------
  Tensor sum() const;
  Tensor sum(Shape dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(Shape dims, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor pow(double exponent) const;
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  Tensor clamp(const Tensor& min, const Tensor& max) const;  // undefined: that bound absent
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor var(Shape dims = {}, bool unbiased = true, bool keepdim = false) const;
  Tensor std(Shape dims = {}, bool unbiased = true, bool keepdim = false) const;

  // PyTorch's printing: tensor([[1.0000, 2.0000]], device='cuda:0')
  std::string str() const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Formats a shape as [2, 3].
std::string shape_str(const Shape& shape);

// --- Sizes ---------------------------------------------------------------------------------
// The element count, byte size and contiguous strides of a tensor of `shape` and `dtype`,
// computed in one place with every product checked: every factory allocates what this says, and
// every file reader validates a header against it before it allocates or reads anything.
struct ContiguousSize {
  int64_t numel = 0;
  int64_t nbytes = 0;
  Shape strides;  // in elements, as a contiguous tensor of `shape` has them
};
// Throws ember::Error starting with `op` when a size is negative, or when the element count, the
// byte size or a stride overflows int64_t (PyTorch: "Storage size calculation overflowed"):
//   "empty: shape [3, 4611686018427387904] of float32 is too large to address: the storage size
//    calculation overflowed int64 (9223372036854775807 bytes at most)".
// Whether that many bytes can be allocated is the allocator's check (Storage::allocate).
ContiguousSize contiguous_size(const Shape& shape, DType dtype, std::string_view op);

// --- Factories ----------------------------------------------------------------------------
// Each throws ember::Error for a shape contiguous_size rejects and ember::OutOfMemory for more
// memory than the device can give, both before anything is allocated.
Tensor empty(Shape shape, TensorOptions options = {});
Tensor zeros(Shape shape, TensorOptions options = {});
Tensor ones(Shape shape, TensorOptions options = {});
Tensor full(Shape shape, double value, TensorOptions options = {});
Tensor empty_like(const Tensor& like);  // same shape, dtype and device, contiguous
Tensor zeros_like(const Tensor& like);
Tensor ones_like(const Tensor& like);
// [start, end) in steps of step; int64 by default as in PyTorch when options are omitted.
Tensor arange(double end, TensorOptions options = {.dtype = kInt64});
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {.dtype = kInt64});
// Uniform in [0, 1) and standard normal, from the default generator (core/generator.h).
Tensor rand(Shape shape, TensorOptions options = {});
Tensor randn(Shape shape, TensorOptions options = {});
// A 1-D tensor holding a copy of `values`; reshape it for more dims.
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options = {.dtype = dtype_of<T>()});
template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options = {.dtype = dtype_of<T>()}) {
  return tensor(std::vector<T>(values), options);
}
// A contiguous tensor over memory ember does not own; `deleter` (may be empty) runs when the
// last view is gone. The memory must stay valid until then.
Tensor from_blob(void* data, Shape shape, TensorOptions options = {},
                 std::function<void(void*)> deleter = {});

// Element-wise closeness, as torch.allclose: |a - b| <= atol + rtol * |b|, same shapes.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace ember
