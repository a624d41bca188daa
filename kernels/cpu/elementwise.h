// Element-wise kernels on the CPU: binary arithmetic and comparisons, unary math, where; and the
// strided loop engine under them, copy and the reductions.
// defines: ember::kernels::cpu::{for_each_strided, for_each_strided_parallel, binary, unary, where, clamp,
//          clamp_backward}
//
// The CPU twins of kernels/cuda/elementwise.h: the same entry points over the same op codes and
// loops (kernels/elementwise.h), without a stream. Each splits a large loop between the kernel
// threads (for_each_strided_parallel: every element is computed alone, so the result is the same
// for any thread count) and runs a small one on the calling thread; the op and
// dtype switches run once per call, outside the element loops, so each loop is type-specialised
// (contiguous runs, and runs against a broadcast scalar, take an index-only loop the compiler
// vectorises). Throws ember::Error naming `name` for a dtype the op has no kernel for.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ember/kernels/cpu/threading.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels::cpu {

// Calls run(offsets, count, steps) once per innermost run: the run's `count` elements of operand
// k sit at offsets[k] + i * steps[k] for i in [0, count). Offsets are in elements. Does nothing
// when any size is 0; calls run once with count 1 for a 0-dim loop.
template <size_t N, class Run>
void for_each_strided(const StridedLoop<N>& shape_and_strides, Run&& run) {
  for (int64_t size : shape_and_strides.sizes) {
    if (size == 0) return;
  }
  StridedLoop<N> loop = coalesce(shape_and_strides);
  std::array<int64_t, N> offsets{};
  if (loop.sizes.empty()) {
    std::array<int64_t, N> steps{};
    run(offsets, int64_t{1}, steps);
    return;
  }
  const int64_t ndim = static_cast<int64_t>(loop.sizes.size());
  const int64_t inner = loop.sizes[ndim - 1];
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = loop.strides[k][ndim - 1];
  std::vector<int64_t> counter(ndim, 0);
  while (true) {
    run(offsets, inner, steps);
    int64_t d = ndim - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += loop.strides[k][d];
      if (++counter[d] < loop.sizes[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= loop.strides[k][d] * loop.sizes[d];
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

namespace detail {

// for_each_strided over the elements [begin, end) of a coalesced, non-empty loop, in its order:
// the first and last runs may be partial.
template <size_t N, class Run>
void for_each_strided_range(const StridedLoop<N>& loop, int64_t begin, int64_t end, Run& run) {
  const int64_t ndim = static_cast<int64_t>(loop.sizes.size());
  const int64_t inner = loop.sizes[ndim - 1];
  std::array<int64_t, N> offsets{}, steps;
  for (size_t k = 0; k < N; ++k) steps[k] = loop.strides[k][ndim - 1];
  std::vector<int64_t> counter(ndim, 0);
  for (int64_t d = ndim - 1, rest = begin; d >= 0; --d) {
    counter[d] = rest % loop.sizes[d];
    rest /= loop.sizes[d];
    for (size_t k = 0; k < N; ++k) offsets[k] += counter[d] * loop.strides[k][d];
  }
  for (int64_t left = end - begin; left > 0;) {
    const int64_t count = std::min(inner - counter[ndim - 1], left);
    run(offsets, count, steps);
    left -= count;
    if (left == 0) return;
    // To the start of the next run: back to column 0 of the inner dim, then carry outward.
    for (size_t k = 0; k < N; ++k) offsets[k] -= counter[ndim - 1] * steps[k];
    counter[ndim - 1] = 0;
    for (int64_t d = ndim - 2; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += loop.strides[k][d];
      if (++counter[d] < loop.sizes[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= loop.strides[k][d] * loop.sizes[d];
      counter[d] = 0;
    }
  }
}

}  // namespace detail

// Below this many elements an element-wise loop stays on the calling thread (the fork costs more).
inline constexpr int64_t kParallelElementwise = 1 << 16;

// for_each_strided, the elements split into get_num_threads() contiguous ranges of the loop's
// order when there are at least kParallelElementwise of them, `run` called from several threads
// at once. For element-wise loops only: each element is written once, by whichever thread holds
// it, and nothing is accumulated across elements. An output (operand 0) that repeats elements
// (a zero stride), or a call inside a parallel region, stays on the calling thread.
template <size_t N, class Run>
void for_each_strided_parallel(const StridedLoop<N>& shape_and_strides, Run&& run) {
  const int64_t numel = numel_of(shape_and_strides.sizes);
  const int threads = numel < kParallelElementwise || omp_in_parallel() ? 1 : get_num_threads();
  StridedLoop<N> loop = coalesce(shape_and_strides);
  const bool distinct_outputs = std::none_of(loop.strides[0].begin(), loop.strides[0].end(),
                                             [](int64_t stride) { return stride == 0; });
  if (threads <= 1 || loop.sizes.empty() || !distinct_outputs) return for_each_strided(loop, run);
  parallel_ranges(numel, threads, [&](int64_t begin, int64_t end) { detail::for_each_strided_range(loop, begin, end, run); });
}

// out = op(a, b). a and b have `compute_dtype`; out has it too, or bool for a comparison. alpha
// (Add only) is converted to the compute type once. Maximum / Minimum propagate NaN (the first
// operand's when both are NaN). Loop operands: 0 out, 1 a, 2 b.
void binary(BinaryOp op, int compute_dtype, void* out, const void* a, const void* b, const StridedLoop<3>& loop,
            double alpha, const char* name);

// out = op(a), out and a of `dtype`. `scalar` is PowScalar's exponent. Loop operands: 0 out, 1 a.
void unary(UnaryOp op, int dtype, void* out, const void* a, const StridedLoop<2>& loop, double scalar,
           const char* name);

// out = condition ? a : b; condition is bool or uint8 (nonzero is true), out, a and b of `dtype`.
// Loop operands: 0 out, 1 condition, 2 a, 3 b.
void where(int dtype, void* out, const uint8_t* condition, const void* a, const void* b, const StridedLoop<4>& loop);

// out = clamp_value(a, bounds) (kernels/elementwise.h), out and a of `dtype` (not bool); the
// bounds are converted to it once. Loop operands: 0 out, 1 a.
void clamp(int dtype, void* out, const void* a, const StridedLoop<2>& loop, const ClampBounds<double>& bounds);

// grad_input = clamp_passes_gradient(input, bounds) ? grad_output : 0, all of floating `dtype`.
// Loop operands: 0 grad_input, 1 grad_output, 2 input.
void clamp_backward(int dtype, void* grad_input, const void* grad_output, const void* input, const StridedLoop<3>& loop,
                    const ClampBounds<double>& bounds);

}  // namespace ember::kernels::cpu
