// Joining and splitting along a dim: cat, stack, split, chunk (declared in core/ops.h).
//
// No kernels of their own: cat allocates its output and copies each input into a narrow view of
// it with Tensor::copy_, which dispatches to the copy kernels (CPU or CUDA, casting to the
// promoted dtype on the way); on the CPU, contiguous inputs of the output's dtype take
// kernels::cpu::concat_blocks instead. split and chunk are narrow views, so their gradients flow back
// through narrow's backward.
#include <algorithm>
#include <string>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/copy.h"

namespace ember {

namespace {

// The CPU fast path of cat: with every input contiguous and of the output's dtype, each row of
// the output (one index of the dims before d) is one contiguous block per input, so the copy is
// a run of memcpys rather than a strided copy per input. Returns false, copying nothing, when it
// does not apply.
bool cat_contiguous_cpu(const std::vector<Tensor>& tensors, const std::vector<int64_t>& offsets, int64_t d,
                        Tensor& out) {
  if (out.is_cuda()) return false;
  std::vector<const void*> srcs;
  std::vector<size_t> block_bytes;
  int64_t inner = 1;
  for (int64_t k = d + 1; k < out.dim(); ++k) inner *= out.size(k);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (offsets[i] < 0) continue;
    const Tensor& t = tensors[i];
    if (t.dtype() != out.dtype() || !t.is_contiguous()) return false;
    srcs.push_back(t.data_ptr());
    block_bytes.push_back(static_cast<size_t>(t.size(d) * inner) * element_size(t.dtype()));
  }
  int64_t rows = 1;
  for (int64_t k = 0; k < d; ++k) rows *= out.size(k);
  kernels::cpu::concat_blocks(out.data_ptr(), srcs.data(), block_bytes.data(), srcs.size(), rows);
  return true;
}

// PyTorch 1.13 skips 1-D tensors with no elements in cat, whatever the other inputs' shapes
// (legacy behaviour kept for code that starts from torch.empty(0) and cats onto it).
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "cat: tensor ", i, " is undefined");
    EMBER_CHECK(tensors[i].dim() > 0, "cat: zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    EMBER_CHECK(tensors[i].device() == tensors[0].device(), "cat: expected all tensors on one device, got ",
                tensors[0].device(), " (tensor 0) and ", tensors[i].device(), " (tensor ", i, ")");
  }
  // The reference shape: the first input that is not skipped (or the first, when all are).
  auto reference = std::find_if(tensors.begin(), tensors.end(), [](const Tensor& t) { return !skipped_in_cat(t); });
  const Tensor& first = reference == tensors.end() ? tensors[0] : *reference;
  const int64_t d = detail::wrap_dim(dim, first.dim(), "cat");
  DType dtype = tensors[0].dtype();
  Shape shape = first.sizes();
  shape[d] = 0;
  for (const Tensor& t : tensors) {
    dtype = promote_types(dtype, t.dtype());
    if (skipped_in_cat(t) && &t != &first) continue;
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == first.size(k);
    EMBER_CHECK(same, "cat: tensors must have the same shape except in dim ", d, ", got ", first.sizes(), " and ",
                t.sizes());
    shape[d] += t.size(d);
  }

  Tensor out = empty(shape, {.dtype = dtype, .device = first.device()});
  std::vector<int64_t> offsets;  // where each input starts in `out` along d (-1: skipped)
  {
    NoGradGuard no_grad;
    int64_t offset = 0;
    for (const Tensor& t : tensors) {
      if (skipped_in_cat(t) && &t != &first) {
        offsets.push_back(-1);
        continue;
      }
      offsets.push_back(offset);
      offset += t.size(d);
    }
    if (!cat_contiguous_cpu(tensors, offsets, d, out)) {
      for (size_t i = 0; i < tensors.size(); ++i) {
        if (offsets[i] >= 0) out.narrow(d, offsets[i], tensors[i].size(d)).copy_(tensors[i]);
      }
    }
  }
  if (is_floating(dtype) && autograd::needs_grad(tensors)) {
    std::vector<Shape> sizes;
    std::vector<DType> dtypes;
    std::vector<bool> wants;
    for (const Tensor& t : tensors) {
      sizes.push_back(t.sizes());
      dtypes.push_back(t.dtype());
      wants.push_back(t.requires_grad());
    }
    autograd::record("cat", tensors, {&out}, [=](const std::vector<Tensor>& grads) {
      std::vector<Tensor> in_grads(sizes.size());
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (!wants[i]) continue;
        in_grads[i] = offsets[i] < 0 ? zeros(sizes[i], {.dtype = dtypes[i], .device = grads[0].device()})
                                     : grads[0].narrow(d, offsets[i], sizes[i][d]).to(dtypes[i]);
      }
      return in_grads;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "stack: tensor ", i, " is undefined");
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: expected each tensor to be equal size, got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
  }
  const int64_t d = detail::wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(d));
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& tensor, int64_t split_size, int64_t dim) {
  EMBER_CHECK(tensor.defined(), "split: the tensor is undefined");
  EMBER_CHECK(tensor.dim() > 0, "split: expected a tensor with at least one dim, got a 0-D tensor");
  const int64_t d = detail::wrap_dim(dim, tensor.dim(), "split");
  const int64_t n = tensor.size(d);
  EMBER_CHECK(split_size >= 0, "split: expected a non-negative split_size, got ", split_size);
  EMBER_CHECK(split_size > 0 || n == 0, "split: split_size can only be 0 if the dim's size is 0, got size ", n,
              " in dim ", d);
  // As PyTorch: at least one piece, even of a dim of size 0.
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * split_size;
    out.push_back(tensor.narrow(d, start, std::min(split_size, n - start)));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& tensor, const std::vector<int64_t>& split_sizes, int64_t dim) {
  EMBER_CHECK(tensor.defined(), "split: the tensor is undefined");
  EMBER_CHECK(tensor.dim() > 0, "split: expected a tensor with at least one dim, got a 0-D tensor");
  const int64_t d = detail::wrap_dim(dim, tensor.dim(), "split");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "split: expected non-negative split sizes, got ", split_sizes);
    total += s;
  }
  EMBER_CHECK(total == tensor.size(d), "split: split sizes ", split_sizes, " sum to ", total,
              " but dim ", d, " of the tensor ", tensor.sizes(), " has size ", tensor.size(d));
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(tensor.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& tensor, int64_t chunks, int64_t dim) {
  EMBER_CHECK(tensor.defined(), "chunk: the tensor is undefined");
  EMBER_CHECK(tensor.dim() > 0, "chunk: expected a tensor with at least one dim, got a 0-D tensor");
  EMBER_CHECK(chunks > 0, "chunk: expected chunks > 0, got ", chunks);
  const int64_t d = detail::wrap_dim(dim, tensor.dim(), "chunk");
  const int64_t n = tensor.size(d);
  // A dim of size 0 gives `chunks` empty pieces, as PyTorch (split would give one).
  if (n == 0) return split(tensor, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(tensor, (n + chunks - 1) / chunks, d);
}

}  // namespace ember
