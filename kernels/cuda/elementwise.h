// Element-wise kernels on one CUDA device: binary arithmetic and comparisons, unary math, where.
// defines: ember::kernels::cuda::{BinaryOp, UnaryOp, is_comparison, binary, unary, where}
//
// Every function takes the output and inputs as one strided loop over the broadcast shape
// (kernels/cpu/elementwise.h's StridedLoop; operand 0 is the output, strides in elements, 0 for a
// broadcast dim; 64-bit offsets). Contiguous operands, and broadcast scalars, run a flat loop
// without index math. Dtypes are copy.h's codes; inputs already hold the compute dtype (core
// converts them first, as on the CPU). Each launches asynchronously on `stream`, requires every
// pointer on the stream's device, and throws ember::Error naming `op` for a dtype the op has no
// kernel for or a layout of more than kMaxDims dims once merged.
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cuda/copy.h"

namespace ember::kernels::cuda {

// Add computes a + alpha * b. Div and Pow need a floating compute dtype. Comparisons write bool.
enum class BinaryOp { Add, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };

// PowScalar computes pow(a, scalar). Exp, Log, Sqrt and PowScalar need a floating dtype.
enum class UnaryOp { Neg, Exp, Log, Sqrt, Abs, PowScalar };

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

// out = op(a, b). a and b have `compute_dtype`; out has it too, or bool for a comparison. alpha
// (Add only) is converted to the compute type on the host, as the CPU kernel does.
// Maximum / Minimum propagate NaN (the first operand's when both are NaN).
void binary(BinaryOp op, int compute_dtype, void* out, const void* a, const void* b,
            const cpu::StridedLoop<3>& loop, double alpha, Stream stream, const char* name);

// out = op(a), out and a of `dtype`. `scalar` is PowScalar's exponent.
void unary(UnaryOp op, int dtype, void* out, const void* a, const cpu::StridedLoop<2>& loop, double scalar,
           Stream stream, const char* name);

// out = condition ? a : b; condition is bool or uint8 (nonzero is true), out, a and b of `dtype`.
// Loop operands: 0 out, 1 condition, 2 a, 3 b.
void where(int dtype, void* out, const uint8_t* condition, const void* a, const void* b,
           const cpu::StridedLoop<4>& loop, Stream stream);

}  // namespace ember::kernels::cuda
