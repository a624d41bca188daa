// Tensor arithmetic on the CPU and on CUDA (the same checks and errors on both), all differentiable.
// defines: add sub mul div neg exp log sqrt pow abs erf tanh sigmoid clamp clamp_min clamp_max, eq ne lt le gt
//          ge, where masked_fill, sum mean var std max min argmax argmin, matmul, sum_to, broadcast_shapes,
//          index_select gather one_hot, operators, ember::detail::{wrap_dim, index_select_skipping}
//
// Binary ops broadcast as NumPy and PyTorch do (sizes align from the right; a size-1 dim
// stretches) and promote dtypes (bool < uint8 < int64 < float32 < float64). Inputs may be strided:
// no hidden copy is made for element-wise ops. Mixing devices throws, naming both.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

namespace detail {
// Maps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// index_select whose backward leaves the slices at `skip_index` without gradient (-1: none), its
// errors naming `op`: the forward of nn::functional::embedding with a padding_idx.
Tensor index_select_skipping(const Tensor& input, int64_t dim, const Tensor& index, int64_t skip_index,
                             const char* op);
}  // namespace detail

// The shape two shapes broadcast to; throws naming `op` when they cannot.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast");
DType promote_types(DType a, DType b);

Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a - alpha * b
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);

Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor abs(const Tensor& a);
// erf, tanh and sigmoid (1 / (1 + exp(-a))) element-wise in a floating dtype, as torch.erf etc.
Tensor erf(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
// min(max(a, min), max) element-wise, as torch.clamp with scalar bounds (core/ops_clamp.cpp): either
// bound may be absent (not both); NaN stays NaN; min > max gives max everywhere. An integer tensor
// keeps its dtype for whole bounds and computes in float32 for fractional ones. The gradient
// passes where min <= a <= max (both ends included, as PyTorch). Throws for a bool tensor.
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max);
// The same with tensor bounds, each broadcast against a (undefined: absent, not both), as
// torch.clamp(a, min, max) with tensors: composed of maximum, minimum and where. Gradients as
// PyTorch's: to a where min <= a <= max, to min where a < min < max, to max where a > max or max < min.
Tensor clamp(const Tensor& a, const Tensor& min, const Tensor& max);
Tensor clamp_min(const Tensor& a, double min);
Tensor clamp_max(const Tensor& a, double max);

// Comparisons return bool tensors and record no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);

// Elements of a where condition is true, else of b (all three broadcast). condition: bool/uint8.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
// a with `value` where mask is true, as torch.masked_fill: mask is bool and broadcasts to a's
// shape (the result keeps a's shape and dtype); a 0-dim tensor value may carry a gradient. The
// gradient of a is zero under the mask.
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value);

// Reductions. An empty `dims` reduces over every dim. sum of integers is int64; mean needs a
// floating tensor. max/min over a dim return {values, indices} as torch.max(x, dim) does.
Tensor sum(const Tensor& a, Shape dims = {}, bool keepdim = false);
Tensor mean(const Tensor& a, Shape dims = {}, bool keepdim = false);
// The variance over `dims` (every dim when empty) of a floating tensor, as torch.var: divided by
// N - 1 when `unbiased` (Bessel's correction), else by N; N - 1 <= 0 gives inf or NaN, as PyTorch.
// Two passes (mean, then the squared deviations from it), so no cancellation; std = sqrt(var).
Tensor var(const Tensor& a, Shape dims = {}, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& a, Shape dims = {}, bool unbiased = true, bool keepdim = false);
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim = false);

// Sums `grad` down to `shape` (the inverse of broadcasting `shape` up to grad's shape).
Tensor sum_to(const Tensor& grad, const Shape& shape);

// 1-D·1-D (dot), 2-D·2-D, batched 3-D·3-D, and 3-D·2-D / 2-D·3-D (the 2-D side broadcasts over
// the batch), as torch.matmul. float32 runs on ember's packed SGEMM; inputs may be transposed
// views without a copy.
Tensor matmul(const Tensor& a, const Tensor& b);

// Joining and splitting along a dim, as torch.cat / stack / split / chunk (core/ops_shape.cpp).
// Any dtype, CPU or CUDA (all inputs on one device), negative dims count from the end.
// cat: the inputs must match in every dim but `dim`; the result has their promoted dtype (the
// gradient of each input comes back in its own dtype); 1-D tensors with no elements are skipped,
// as PyTorch 1.13 allows. Throws naming both shapes, e.g. "cat: tensors must have the same shape
// except in dim 1, got [2, 3, 4] and [2, 5, 5]", for an empty list, a 0-D input, mixed devices.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// stack: the inputs must have one shape; the result has a new dim `dim` (in [-ndim-1, ndim]).
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// split: views (narrow) of split_size each along `dim`, the last one smaller when the size does
// not divide; or of the given sizes, which must sum to the dim's size. Gradients flow back.
std::vector<Tensor> split(const Tensor& tensor, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& tensor, const std::vector<int64_t>& split_sizes, int64_t dim = 0);
// chunk: split into `chunks` views of ceil(size / chunks) each (fewer when that covers the dim).
std::vector<Tensor> chunk(const Tensor& tensor, int64_t chunks, int64_t dim = 0);

// Indexing, as torch.index_select / gather / nn.functional.one_hot (core/ops_index.cpp); CPU or
// CUDA, index int64 on the input's device, every index checked (an error names the op, the bad
// index and the size it indexes). index_select: the slices index[i] of `dim` (index 1-D or
// 0-D), any dtype; its gradient sums repeated indices in index order, the same bits every run.
// gather: out[i][j][k] = input[index[i][j][k]][j][k] for dim 0 (and so on), index of the input's
// rank and no larger outside `dim`; differentiable in input. one_hot: int64 [*, num_classes]
// (-1: max + 1), not differentiable.
Tensor index_select(const Tensor& input, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& input, int64_t dim, const Tensor& index);
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return add(neg(b), a); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }

}  // namespace ember
