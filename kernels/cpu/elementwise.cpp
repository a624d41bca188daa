// Element-wise binary, unary and where kernels on the CPU: one templated functor per op code, run
// by one type-specialised loop per (op, dtype).
#include "ember/kernels/cpu/elementwise.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember::kernels::cpu {

namespace {

template <BinaryOp op, class T>
inline auto apply_binary(T x, T y, T alpha) {
  if constexpr (op == BinaryOp::Add) {
    return static_cast<T>(x + alpha * y);
  } else if constexpr (op == BinaryOp::Mul) {
    return static_cast<T>(x * y);
  } else if constexpr (op == BinaryOp::Div) {
    static_assert(std::is_floating_point_v<T>, "div computes in a floating type");
    return x / y;
  } else if constexpr (op == BinaryOp::Pow) {
    static_assert(std::is_floating_point_v<T>, "pow computes in a floating type");
    return std::pow(x, y);
  } else {
    return select_or_compare<op, T>(x, y);
  }
}

template <BinaryOp op, class T>
void run_binary(void* out, const void* a, const void* b, const StridedLoop<3>& loop, double alpha) {
  using O = std::conditional_t<is_comparison(op), uint8_t, T>;
  O* po = static_cast<O*>(out);
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  const T scale = static_cast<T>(alpha);
  for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
    O* o = po + off[0];
    const T* u = pa + off[1];
    const T* v = pb + off[2];
    if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
      for (int64_t k = 0; k < n; ++k) o[k] = static_cast<O>(apply_binary<op, T>(u[k], v[k], scale));
    } else if (step[0] == 1 && step[1] == 1 && step[2] == 0) {  // against a broadcast scalar
      const T y = v[0];
      for (int64_t k = 0; k < n; ++k) o[k] = static_cast<O>(apply_binary<op, T>(u[k], y, scale));
    } else if (step[0] == 1 && step[1] == 0 && step[2] == 1) {
      const T x = u[0];
      for (int64_t k = 0; k < n; ++k) o[k] = static_cast<O>(apply_binary<op, T>(x, v[k], scale));
    } else {
      for (int64_t k = 0; k < n; ++k) {
        o[k * step[0]] = static_cast<O>(apply_binary<op, T>(u[k * step[1]], v[k * step[2]], scale));
      }
    }
  });
}

template <UnaryOp op, class T>
inline T apply_unary(T x, T scalar) {
  if constexpr (op == UnaryOp::Neg || op == UnaryOp::Abs) {
    return negate_or_abs<op, T>(x);
  } else {
    static_assert(std::is_floating_point_v<T>, "exp, log, sqrt and pow compute in a floating type");
    if constexpr (op == UnaryOp::Exp) return std::exp(x);
    else if constexpr (op == UnaryOp::Log) return std::log(x);
    else if constexpr (op == UnaryOp::Sqrt) return std::sqrt(x);
    else if constexpr (op == UnaryOp::Erf) return std::erf(x);
    else if constexpr (op == UnaryOp::Tanh) return std::tanh(x);
    else if constexpr (op == UnaryOp::Sigmoid) return T(1) / (T(1) + std::exp(-x));
    else return std::pow(x, scalar);
  }
}

template <UnaryOp op, class T>
void run_unary(void* out, const void* a, const StridedLoop<2>& loop, double scalar) {
  T* po = static_cast<T*>(out);
  const T* pa = static_cast<const T*>(a);
  const T s = static_cast<T>(scalar);
  for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
    T* o = po + off[0];
    const T* u = pa + off[1];
    if (step[0] == 1 && step[1] == 1) {
      for (int64_t k = 0; k < n; ++k) o[k] = apply_unary<op, T>(u[k], s);
    } else {
      for (int64_t k = 0; k < n; ++k) o[k * step[0]] = apply_unary<op, T>(u[k * step[1]], s);
    }
  });
}

[[noreturn]] void needs_floating(const char* name, int dtype) {
  throw Error(ember::detail::str(name, ": the kernel needs a floating compute dtype, got dtype code ", dtype));
}

}  // namespace

void binary(BinaryOp op, int compute_dtype, void* out, const void* a, const void* b, const StridedLoop<3>& loop,
            double alpha, const char* name) {
  dispatch_dtype(compute_dtype, name, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Add: return run_binary<BinaryOp::Add, T>(out, a, b, loop, alpha);
      case BinaryOp::Mul: return run_binary<BinaryOp::Mul, T>(out, a, b, loop, alpha);
      case BinaryOp::Div:
      case BinaryOp::Pow:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == BinaryOp::Div) return run_binary<BinaryOp::Div, T>(out, a, b, loop, alpha);
          return run_binary<BinaryOp::Pow, T>(out, a, b, loop, alpha);
        } else {
          needs_floating(name, compute_dtype);
        }
      case BinaryOp::Maximum: return run_binary<BinaryOp::Maximum, T>(out, a, b, loop, alpha);
      case BinaryOp::Minimum: return run_binary<BinaryOp::Minimum, T>(out, a, b, loop, alpha);
      case BinaryOp::Eq: return run_binary<BinaryOp::Eq, T>(out, a, b, loop, alpha);
      case BinaryOp::Ne: return run_binary<BinaryOp::Ne, T>(out, a, b, loop, alpha);
      case BinaryOp::Lt: return run_binary<BinaryOp::Lt, T>(out, a, b, loop, alpha);
      case BinaryOp::Le: return run_binary<BinaryOp::Le, T>(out, a, b, loop, alpha);
      case BinaryOp::Gt: return run_binary<BinaryOp::Gt, T>(out, a, b, loop, alpha);
      case BinaryOp::Ge: return run_binary<BinaryOp::Ge, T>(out, a, b, loop, alpha);
    }
    throw Error(ember::detail::str(name, ": unknown binary op code ", static_cast<int>(op)));
  });
}

void unary(UnaryOp op, int dtype, void* out, const void* a, const StridedLoop<2>& loop, double scalar,
           const char* name) {
  dispatch_dtype(dtype, name, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case UnaryOp::Neg: return run_unary<UnaryOp::Neg, T>(out, a, loop, scalar);
      case UnaryOp::Abs: return run_unary<UnaryOp::Abs, T>(out, a, loop, scalar);
      case UnaryOp::Exp:
      case UnaryOp::Log:
      case UnaryOp::Sqrt:
      case UnaryOp::PowScalar:
      case UnaryOp::Erf:
      case UnaryOp::Tanh:
      case UnaryOp::Sigmoid:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == UnaryOp::Erf) return run_unary<UnaryOp::Erf, T>(out, a, loop, scalar);
          if (op == UnaryOp::Tanh) return run_unary<UnaryOp::Tanh, T>(out, a, loop, scalar);
          if (op == UnaryOp::Sigmoid) return run_unary<UnaryOp::Sigmoid, T>(out, a, loop, scalar);
          if (op == UnaryOp::Exp) return run_unary<UnaryOp::Exp, T>(out, a, loop, scalar);
          if (op == UnaryOp::Log) return run_unary<UnaryOp::Log, T>(out, a, loop, scalar);
          if (op == UnaryOp::Sqrt) return run_unary<UnaryOp::Sqrt, T>(out, a, loop, scalar);
          return run_unary<UnaryOp::PowScalar, T>(out, a, loop, scalar);
        } else {
          needs_floating(name, dtype);
        }
    }
    throw Error(ember::detail::str(name, ": unknown unary op code ", static_cast<int>(op)));
  });
}

void where(int dtype, void* out, const uint8_t* condition, const void* a, const void* b, const StridedLoop<4>& loop) {
  dispatch_dtype(dtype, "where", [&](auto tag) {
    using T = decltype(tag);
    T* po = static_cast<T*>(out);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
      T* o = po + off[0];
      const uint8_t* c = condition + off[1];
      const T* u = pa + off[2];
      const T* v = pb + off[3];
      if (step[0] == 1 && step[1] == 1 && step[2] == 1 && step[3] == 1) {
        for (int64_t k = 0; k < n; ++k) o[k] = c[k] != 0 ? u[k] : v[k];
      } else {
        for (int64_t k = 0; k < n; ++k) o[k * step[0]] = c[k * step[1]] != 0 ? u[k * step[2]] : v[k * step[3]];
      }
    });
  });
}

namespace {

template <class T>
ClampBounds<T> bounds_as(const ClampBounds<double>& b) {
  return {static_cast<T>(b.min), static_cast<T>(b.max), b.has_min, b.has_max};
}

}  // namespace

void clamp(int dtype, void* out, const void* a, const StridedLoop<2>& loop, const ClampBounds<double>& bounds) {
  EMBER_CHECK(dtype != kDTypeBool, "clamp: the kernel does not take bool tensors");
  dispatch_dtype(dtype, "clamp", [&](auto tag) {
    using T = decltype(tag);
    const ClampBounds<T> b = bounds_as<T>(bounds);
    // An absent bound as the type's extreme, so that the contiguous loop is two compare-selects
    // the compiler vectorises (a NaN compares false both ways and stays: clamp_value's result).
    const T lo = b.has_min ? b.min : std::numeric_limits<T>::lowest();
    const T hi = b.has_max ? b.max : std::numeric_limits<T>::max();
    T* po = static_cast<T*>(out);
    const T* pa = static_cast<const T*>(a);
    for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
      T* o = po + off[0];
      const T* u = pa + off[1];
      if (step[0] == 1 && step[1] == 1) {
        for (int64_t k = 0; k < n; ++k) {
          const T raised = u[k] < lo ? lo : u[k];
          o[k] = raised > hi ? hi : raised;
        }
      } else {
        for (int64_t k = 0; k < n; ++k) o[k * step[0]] = clamp_value(u[k * step[1]], b);
      }
    });
  });
}

void clamp_backward(int dtype, void* grad_input, const void* grad_output, const void* input, const StridedLoop<3>& loop,
                    const ClampBounds<double>& bounds) {
  dispatch_dtype(dtype, "clamp_backward", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const ClampBounds<T> b = bounds_as<T>(bounds);
      T* pgi = static_cast<T*>(grad_input);
      const T* pgo = static_cast<const T*>(grad_output);
      const T* px = static_cast<const T*>(input);
      for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
        T* gi = pgi + off[0];
        const T* go = pgo + off[1];
        const T* x = px + off[2];
        if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
          for (int64_t k = 0; k < n; ++k) gi[k] = clamp_passes_gradient(x[k], b) ? go[k] : T(0);
        } else {
          for (int64_t k = 0; k < n; ++k) {
            gi[k * step[0]] = clamp_passes_gradient(x[k * step[2]], b) ? go[k * step[1]] : T(0);
          }
        }
      });
    } else {
      needs_floating("clamp_backward", dtype);
    }
  });
}

}  // namespace ember::kernels::cpu
