// Element-wise kernels on the CPU: binary arithmetic and comparisons, unary math, where; and the
// strided loop engine under them, copy and the reductions.
// defines: ember::kernels::cpu::{for_each_strided, binary, unary, where, clamp, clamp_backward}
//
// The CPU twins of kernels/cuda/elementwise.h: the same entry points over the same op codes and
// loops (kernels/elementwise.h), without a stream. Each runs on the calling thread; the op and
// dtype switches run once per call, outside the element loops, so each loop is type-specialised
// (contiguous runs, and runs against a broadcast scalar, take an index-only loop the compiler
// vectorises). Throws ember::Error naming `name` for a dtype the op has no kernel for.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

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
