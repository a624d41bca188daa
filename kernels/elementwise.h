// What the CPU and CUDA element-wise kernels share: the element codes, the op codes and the
// strided loop over several operands of one shape. kernels/cpu/elementwise.h and
// kernels/cuda/elementwise.h declare the same entry points over these.
// defines: ember::kernels::{kDType*, dispatch_dtype, BinaryOp, UnaryOp, is_comparison,
//          select_or_compare, negate_or_abs, ClampBounds, clamp_value, clamp_passes_gradient,
//          StridedLoop, coalesce, numel_of, contiguous_strides}
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ember/common/error.h"

namespace ember::kernels {

// Element codes shared with core's DType: static_cast<int>(DType) gives them (checked once, by a
// static_assert in core/ops_elementwise.cpp).
inline constexpr int kDTypeFloat32 = 0;
inline constexpr int kDTypeFloat64 = 1;
inline constexpr int kDTypeInt64 = 2;
inline constexpr int kDTypeUInt8 = 3;
inline constexpr int kDTypeBool = 4;

// Calls fn(T{}) with the C++ type computing a dtype code (bool computes as uint8: 0 or 1).
// Throws ember::Error naming `op` for any other code. The switch runs once per call, outside
// every element loop.
template <class Fn>
void dispatch_dtype(int code, const char* op, Fn&& fn) {
  switch (code) {
    case kDTypeFloat32: fn(float{}); break;
    case kDTypeFloat64: fn(double{}); break;
    case kDTypeInt64: fn(int64_t{}); break;
    case kDTypeUInt8:
    case kDTypeBool: fn(uint8_t{}); break;
    default: throw Error(ember::detail::str(op, ": the kernels do not support dtype code ", code));
  }
}

// Add computes a + alpha * b. Div and Pow need a floating compute dtype. Comparisons write bool.
enum class BinaryOp { Add, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };

// PowScalar computes pow(a, scalar); Sigmoid 1 / (1 + exp(-a)). All but Neg and Abs need a
// floating dtype.
enum class UnaryOp { Neg, Exp, Log, Sqrt, Abs, PowScalar, Erf, Tanh, Sigmoid };

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

// Maximum, Minimum and the comparisons: the binary ops whose formula is the same on every device,
// written once for the CPU and CUDA kernels (constexpr, so device code calls it too: nvcc's
// --expt-relaxed-constexpr). Maximum / Minimum propagate NaN (x's when both are NaN); a
// comparison gives 0 or 1.
template <BinaryOp op, class T>
constexpr auto select_or_compare(T x, T y) {
  if constexpr (op == BinaryOp::Maximum || op == BinaryOp::Minimum) {
    if (x != x) return x;  // NaN propagates (false for integers)
    if (y != y) return y;
    if constexpr (op == BinaryOp::Maximum) return x > y ? x : y;
    else return x < y ? x : y;
  } else if constexpr (op == BinaryOp::Eq) {
    return static_cast<uint8_t>(x == y);
  } else if constexpr (op == BinaryOp::Ne) {
    return static_cast<uint8_t>(x != y);
  } else if constexpr (op == BinaryOp::Lt) {
    return static_cast<uint8_t>(x < y);
  } else if constexpr (op == BinaryOp::Le) {
    return static_cast<uint8_t>(x <= y);
  } else if constexpr (op == BinaryOp::Gt) {
    return static_cast<uint8_t>(x > y);
  } else {
    static_assert(op == BinaryOp::Ge, "select_or_compare: an arithmetic BinaryOp");
    return static_cast<uint8_t>(x >= y);
  }
}

// Neg and Abs, the unary ops whose formula is the same on every device (as select_or_compare).
template <UnaryOp op, class T>
constexpr T negate_or_abs(T x) {
  if constexpr (op == UnaryOp::Neg) {
    return static_cast<T>(-x);
  } else {
    static_assert(op == UnaryOp::Abs, "negate_or_abs: a UnaryOp other than Neg and Abs");
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? static_cast<T>(-x) : x;
  }
}

// clamp's bounds, either of which may be absent (torch.clamp(x, min=None, max=...)), in the
// element type T of the kernel that uses them (double at the kernels' entry points).
template <class T>
struct ClampBounds {
  T min{}, max{};
  bool has_min = false, has_max = false;
};

// min(max(x, lo), hi) as torch.clamp: NaN stays NaN, and lo > hi gives hi everywhere.
template <class T>
constexpr T clamp_value(T x, const ClampBounds<T>& b) {
  if (x != x) return x;
  if (b.has_min && x < b.min) x = b.min;
  if (b.has_max && x > b.max) x = b.max;
  return x;
}

// Whether clamp's gradient reaches x: inside the closed range [lo, hi], as PyTorch's
// clamp_backward (a NaN x gets none).
template <class T>
constexpr bool clamp_passes_gradient(T x, const ClampBounds<T>& b) {
  return (!b.has_min || x >= b.min) && (!b.has_max || x <= b.max);
}

// N operands viewed over one shape; strides in elements, 0 for a broadcast dim. Operand 0 is the
// output of every kernel that takes one.
template <size_t N>
struct StridedLoop {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
};

// Merges adjacent dims that every operand walks contiguously with respect to each other, and
// drops size-1 dims, so that a contiguous tensor becomes one flat run. Keeps dim order.
template <size_t N>
StridedLoop<N> coalesce(const StridedLoop<N>& loop) {
  StridedLoop<N> out;
  for (size_t d = 0; d < loop.sizes.size(); ++d) {
    if (loop.sizes[d] == 1) continue;
    bool merge = !out.sizes.empty();
    for (size_t k = 0; merge && k < N; ++k) {
      merge = out.strides[k].back() == loop.strides[k][d] * loop.sizes[d];
    }
    if (merge) {
      out.sizes.back() *= loop.sizes[d];
      for (size_t k = 0; k < N; ++k) out.strides[k].back() = loop.strides[k][d];
    } else {
      out.sizes.push_back(loop.sizes[d]);
      for (size_t k = 0; k < N; ++k) out.strides[k].push_back(loop.strides[k][d]);
    }
  }
  return out;
}

inline int64_t numel_of(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Row-major strides, in elements, of a dense tensor of `sizes`.
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = step;
    step *= sizes[d];
  }
  return strides;
}

}  // namespace ember::kernels
