// Element-wise binary, unary and where kernels: one templated device functor per op code, run by
// strided.cuh's flat or strided grid-stride loop (Note [Element-wise launch]).
#include "ember/kernels/cuda/elementwise.h"

#include <type_traits>

#include "ember/kernels/cuda/strided.cuh"

namespace ember::kernels::cuda {

namespace {

// Note [Rounding as the CPU does]: nvcc fuses a * b + c into one FMA by default; the CPU kernels
// round the product first. Add and Mul round each step explicitly (__fmul_rn, __fadd_rn) so float
// results match the CPU bit for bit; / and sqrt are IEEE-rounded without --use_fast_math.
template <class T>
__device__ __forceinline__ T mul_rn(T x, T y) {
  if constexpr (std::is_same_v<T, float>) return __fmul_rn(x, y);
  else if constexpr (std::is_same_v<T, double>) return __dmul_rn(x, y);
  else return static_cast<T>(x * y);
}

template <class T>
__device__ __forceinline__ T add_rn(T x, T y) {
  if constexpr (std::is_same_v<T, float>) return __fadd_rn(x, y);
  else if constexpr (std::is_same_v<T, double>) return __dadd_rn(x, y);
  else return static_cast<T>(x + y);
}

template <BinaryOp op, class T>
__device__ __forceinline__ auto apply_binary(T x, T y, T alpha) {
  if constexpr (op == BinaryOp::Add) {
    return add_rn(x, mul_rn(alpha, y));
  } else if constexpr (op == BinaryOp::Mul) {
    return mul_rn(x, y);
  } else if constexpr (op == BinaryOp::Div) {
    static_assert(std::is_floating_point_v<T>, "div computes in a floating type");
    return x / y;
  } else if constexpr (op == BinaryOp::Pow) {
    static_assert(std::is_floating_point_v<T>, "pow computes in a floating type");
    if constexpr (std::is_same_v<T, float>) return powf(x, y);
    else return ::pow(x, y);
  } else {
    return select_or_compare<op, T>(x, y);
  }
}

template <BinaryOp op, class T, class O>
struct BinaryFn {
  const T* a;
  const T* b;
  T alpha;
  __device__ O operator()(const int64_t (&off)[3]) const {
    return static_cast<O>(apply_binary<op, T>(a[off[1]], b[off[2]], alpha));
  }
};

template <UnaryOp op, class T>
__device__ __forceinline__ T apply_unary(T x, T scalar) {
  if constexpr (op == UnaryOp::Neg || op == UnaryOp::Abs) {
    return negate_or_abs<op, T>(x);
  } else {
    static_assert(std::is_floating_point_v<T>, "exp, log, sqrt and pow compute in a floating type");
    if constexpr (std::is_same_v<T, float>) {
      if constexpr (op == UnaryOp::Exp) return expf(x);
      else if constexpr (op == UnaryOp::Log) return logf(x);
      else if constexpr (op == UnaryOp::Sqrt) return sqrtf(x);
      else if constexpr (op == UnaryOp::Erf) return erff(x);
      else if constexpr (op == UnaryOp::Tanh) return tanhf(x);
      else if constexpr (op == UnaryOp::Sigmoid) return 1.0f / (1.0f + expf(-x));
      else return powf(x, scalar);
    } else {
      if constexpr (op == UnaryOp::Exp) return ::exp(x);
      else if constexpr (op == UnaryOp::Log) return ::log(x);
      else if constexpr (op == UnaryOp::Sqrt) return ::sqrt(x);
      else if constexpr (op == UnaryOp::Erf) return ::erf(x);
      else if constexpr (op == UnaryOp::Tanh) return ::tanh(x);
      else if constexpr (op == UnaryOp::Sigmoid) return 1.0 / (1.0 + ::exp(-x));
      else return ::pow(x, scalar);
    }
  }
}

template <UnaryOp op, class T>
struct UnaryFn {
  const T* a;
  T scalar;
  __device__ T operator()(const int64_t (&off)[2]) const { return apply_unary<op, T>(a[off[1]], scalar); }
};

template <class T>
struct WhereFn {
  const uint8_t* condition;
  const T* a;
  const T* b;
  __device__ T operator()(const int64_t (&off)[4]) const {
    return condition[off[1]] != 0 ? a[off[2]] : b[off[3]];
  }
};

template <class T>
struct ClampFn {
  const T* a;
  ClampBounds<T> bounds;
  __device__ T operator()(const int64_t (&off)[2]) const { return clamp_value(a[off[1]], bounds); }
};

template <class T>
struct ClampBackwardFn {
  const T* grad_output;
  const T* input;
  ClampBounds<T> bounds;
  __device__ T operator()(const int64_t (&off)[3]) const {
    return clamp_passes_gradient(input[off[2]], bounds) ? grad_output[off[1]] : T(0);
  }
};

template <class T>
ClampBounds<T> bounds_as(const ClampBounds<double>& b) {
  return {static_cast<T>(b.min), static_cast<T>(b.max), b.has_min, b.has_max};
}

template <BinaryOp op, class T>
void launch_binary(void* out, const void* a, const void* b, const StridedLoop<3>& loop, double alpha,
                   cudaStream_t stream, const char* name) {
  using O = std::conditional_t<is_comparison(op), uint8_t, T>;
  BinaryFn<op, T, O> fn{static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T>(alpha)};
  detail::launch_elementwise<3>(static_cast<O*>(out), fn, loop, stream, name);
}

template <UnaryOp op, class T>
void launch_unary(void* out, const void* a, const StridedLoop<2>& loop, double scalar, cudaStream_t stream,
                  const char* name) {
  UnaryFn<op, T> fn{static_cast<const T*>(a), static_cast<T>(scalar)};
  detail::launch_elementwise<2>(static_cast<T*>(out), fn, loop, stream, name);
}

[[noreturn]] void needs_floating(const char* name, int dtype) {
  throw Error(ember::detail::str(name, ": the CUDA kernel needs a floating compute dtype, got dtype code ", dtype));
}

}  // namespace

void binary(BinaryOp op, int compute_dtype, void* out, const void* a, const void* b,
            const StridedLoop<3>& loop, double alpha, cudaStream_t stream, const char* name) {
  dispatch_dtype(compute_dtype, name, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Add: return launch_binary<BinaryOp::Add, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Mul: return launch_binary<BinaryOp::Mul, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Div:
      case BinaryOp::Pow:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == BinaryOp::Div) return launch_binary<BinaryOp::Div, T>(out, a, b, loop, alpha, stream, name);
          return launch_binary<BinaryOp::Pow, T>(out, a, b, loop, alpha, stream, name);
        } else {
          needs_floating(name, compute_dtype);
        }
      case BinaryOp::Maximum: return launch_binary<BinaryOp::Maximum, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Minimum: return launch_binary<BinaryOp::Minimum, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Eq: return launch_binary<BinaryOp::Eq, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Ne: return launch_binary<BinaryOp::Ne, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Lt: return launch_binary<BinaryOp::Lt, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Le: return launch_binary<BinaryOp::Le, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Gt: return launch_binary<BinaryOp::Gt, T>(out, a, b, loop, alpha, stream, name);
      case BinaryOp::Ge: return launch_binary<BinaryOp::Ge, T>(out, a, b, loop, alpha, stream, name);
    }
    throw Error(ember::detail::str(name, ": unknown binary op code ", static_cast<int>(op)));
  });
}

void unary(UnaryOp op, int dtype, void* out, const void* a, const StridedLoop<2>& loop, double scalar,
           cudaStream_t stream, const char* name) {
  dispatch_dtype(dtype, name, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case UnaryOp::Neg: return launch_unary<UnaryOp::Neg, T>(out, a, loop, scalar, stream, name);
      case UnaryOp::Abs: return launch_unary<UnaryOp::Abs, T>(out, a, loop, scalar, stream, name);
      case UnaryOp::Exp:
      case UnaryOp::Log:
      case UnaryOp::Sqrt:
      case UnaryOp::PowScalar:
      case UnaryOp::Erf:
      case UnaryOp::Tanh:
      case UnaryOp::Sigmoid:
        if constexpr (std::is_floating_point_v<T>) {
          if (op == UnaryOp::Erf) return launch_unary<UnaryOp::Erf, T>(out, a, loop, scalar, stream, name);
          if (op == UnaryOp::Tanh) return launch_unary<UnaryOp::Tanh, T>(out, a, loop, scalar, stream, name);
          if (op == UnaryOp::Sigmoid) return launch_unary<UnaryOp::Sigmoid, T>(out, a, loop, scalar, stream, name);
          if (op == UnaryOp::Exp) return launch_unary<UnaryOp::Exp, T>(out, a, loop, scalar, stream, name);
          if (op == UnaryOp::Log) return launch_unary<UnaryOp::Log, T>(out, a, loop, scalar, stream, name);
          if (op == UnaryOp::Sqrt) return launch_unary<UnaryOp::Sqrt, T>(out, a, loop, scalar, stream, name);
          return launch_unary<UnaryOp::PowScalar, T>(out, a, loop, scalar, stream, name);
        } else {
          needs_floating(name, dtype);
        }
    }
    throw Error(ember::detail::str(name, ": unknown unary op code ", static_cast<int>(op)));
  });
}

void where(int dtype, void* out, const uint8_t* condition, const void* a, const void* b,
           const StridedLoop<4>& loop, cudaStream_t stream) {
  dispatch_dtype(dtype, "where", [&](auto tag) {
    using T = decltype(tag);
    WhereFn<T> fn{condition, static_cast<const T*>(a), static_cast<const T*>(b)};
    detail::launch_elementwise<4>(static_cast<T*>(out), fn, loop, stream, "where");
  });
}

void clamp(int dtype, void* out, const void* a, const StridedLoop<2>& loop, const ClampBounds<double>& bounds,
           cudaStream_t stream) {
  EMBER_CHECK(dtype != kDTypeBool, "clamp: the CUDA kernel does not take bool tensors");
  dispatch_dtype(dtype, "clamp", [&](auto tag) {
    using T = decltype(tag);
    ClampFn<T> fn{static_cast<const T*>(a), bounds_as<T>(bounds)};
    detail::launch_elementwise<2>(static_cast<T*>(out), fn, loop, stream, "clamp");
  });
}

void clamp_backward(int dtype, void* grad_input, const void* grad_output, const void* input, const StridedLoop<3>& loop,
                    const ClampBounds<double>& bounds, cudaStream_t stream) {
  dispatch_dtype(dtype, "clamp_backward", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      ClampBackwardFn<T> fn{static_cast<const T*>(grad_output), static_cast<const T*>(input), bounds_as<T>(bounds)};
      detail::launch_elementwise<3>(static_cast<T*>(grad_input), fn, loop, stream, "clamp_backward");
    } else {
      needs_floating("clamp_backward", dtype);
    }
  });
}

}  // namespace ember::kernels::cuda
