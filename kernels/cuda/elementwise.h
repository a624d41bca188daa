// Element-wise kernels on one CUDA device: binary arithmetic and comparisons, unary math, where.
// defines: ember::kernels::cuda::{binary, unary, where, clamp, clamp_backward}
//
// The CUDA twins of kernels/cpu/elementwise.h, over the same op codes and loops
// (kernels/elementwise.h). Every function takes the output and inputs as one strided loop over
// the broadcast shape (operand 0 is the output, strides in elements, 0 for a broadcast dim;
// 64-bit offsets). Contiguous operands, and broadcast scalars, run a flat loop without index
// math. Inputs already hold the compute dtype (core converts them first, on both devices). Each launches asynchronously on `stream`, requires every
// pointer on the stream's device, and throws ember::Error naming `op` for a dtype the op has no
// kernel for or a layout of more than kMaxDims dims once merged.
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

#include "ember/kernels/elementwise.h"

namespace ember::kernels::cuda {

// out = op(a, b). a and b have `compute_dtype`; out has it too, or bool for a comparison. alpha
// (Add only) is converted to the compute type on the host, as the CPU kernel does.
// Maximum / Minimum propagate NaN (the first operand's when both are NaN).
void binary(BinaryOp op, int compute_dtype, void* out, const void* a, const void* b,
            const StridedLoop<3>& loop, double alpha, Stream stream, const char* name);

// out = op(a), out and a of `dtype`. `scalar` is PowScalar's exponent.
void unary(UnaryOp op, int dtype, void* out, const void* a, const StridedLoop<2>& loop, double scalar,
           Stream stream, const char* name);

// out = condition ? a : b; condition is bool or uint8 (nonzero is true), out, a and b of `dtype`.
// Loop operands: 0 out, 1 condition, 2 a, 3 b.
void where(int dtype, void* out, const uint8_t* condition, const void* a, const void* b,
           const StridedLoop<4>& loop, Stream stream);

// out = clamp_value(a, bounds) (kernels/elementwise.h), out and a of `dtype` (not bool); the
// bounds are converted to it on the host, as the CPU kernel does. Loop operands: 0 out, 1 a.
void clamp(int dtype, void* out, const void* a, const StridedLoop<2>& loop, const ClampBounds<double>& bounds,
           Stream stream);

// grad_input = clamp_passes_gradient(input, bounds) ? grad_output : 0, all of floating `dtype`.
// Loop operands: 0 grad_input, 1 grad_output, 2 input.
void clamp_backward(int dtype, void* grad_input, const void* grad_output, const void* input, const StridedLoop<3>& loop,
                    const ClampBounds<double>& bounds, Stream stream);

}  // namespace ember::kernels::cuda
