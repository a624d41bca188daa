#include "ember/kernels/cpu/activation.h"

#include <omp.h>

#include <cmath>
#include <type_traits>

#include "ember/common/error.h"
#include "ember/kernels/cpu/threading.h"
#include "ember/kernels/cpu/vector_math.h"

namespace ember::kernels::cpu {
namespace {

// Below this many elements a loop stays on the calling thread (the fork costs more).
constexpr int64_t kParallelElements = 1 << 16;

int threads_for(int64_t n) {
  return (n >= kParallelElements && !omp_in_parallel()) ? get_num_threads() : 1;
}

// The loops, one function per element type so that EMBER_VECTOR_CLONES can compile each for
// AVX-512, AVX2 and the baseline (see threading.h); always_inline puts the loop into every clone.
template <class T>
[[gnu::always_inline]] inline void relu_forward_loop(const T* x, T* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
}

template <class T>
[[gnu::always_inline]] inline void relu_backward_loop(const T* dy, const T* y, T* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    // dy is read on both sides of the select: a read under the condition kept GCC from
    // vectorising, and the branch it made instead mispredicted on every other element (10x slower
    // than relu_forward).
    const T g = dy[i];
    dx[i] = y[i] > T(0) ? g : T(0);
  }
}

EMBER_VECTOR_CLONES void relu_forward_range(const float* x, float* y, int64_t n) { relu_forward_loop(x, y, n); }
EMBER_VECTOR_CLONES void relu_forward_range(const double* x, double* y, int64_t n) { relu_forward_loop(x, y, n); }
EMBER_VECTOR_CLONES void relu_backward_range(const float* dy, const float* y, float* dx, int64_t n) {
  relu_backward_loop(dy, y, dx, n);
}
EMBER_VECTOR_CLONES void relu_backward_range(const double* dy, const double* y, double* dx, int64_t n) {
  relu_backward_loop(dy, y, dx, n);
}

// --- sigmoid, tanh, gelu, silu, leaky_relu, elu, hardswish ---------------------------------
// float: the branch-free vector_math.h functions, so that the loops below vectorise; double: the
// std:: functions (exact to the last bit or so, what the float64 gradient checks need).
struct FloatMath {
  [[gnu::always_inline]] static float exp(float x) { return vmath::exp(x); }
  [[gnu::always_inline]] static float expm1(float x) { return vmath::expm1(x); }
  [[gnu::always_inline]] static float tanh(float x) { return vmath::tanh(x); }
  [[gnu::always_inline]] static float erf(float x) { return vmath::erf(x); }
};
struct DoubleMath {
  static double exp(double x) { return std::exp(x); }
  static double expm1(double x) { return std::expm1(x); }
  static double tanh(double x) { return std::tanh(x); }
  static double erf(double x) { return std::erf(x); }
};
template <class T>
using MathFor = std::conditional_t<std::is_same_v<T, float>, FloatMath, DoubleMath>;

// PyTorch's constants: 1/sqrt(2); 1/sqrt(2 pi); sqrt(2/pi); the tanh form's cubic coefficient.
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

template <Activation op, class T>
[[gnu::always_inline]] inline T forward_value(T x, T param) {
  using M = MathFor<T>;
  if constexpr (op == Activation::Sigmoid) {
    return T(1) / (T(1) + M::exp(-x));
  } else if constexpr (op == Activation::Tanh) {
    return M::tanh(x);
  } else if constexpr (op == Activation::Gelu) {
    return x * T(0.5) * (T(1) + M::erf(x * T(kSqrtHalf)));
  } else if constexpr (op == Activation::GeluTanh) {
    const T inner = T(kSqrt2OverPi) * (x + T(kGeluCubic) * x * x * x);
    return T(0.5) * x * (T(1) + M::tanh(inner));
  } else if constexpr (op == Activation::Silu) {
    return x / (T(1) + M::exp(-x));
  } else if constexpr (op == Activation::LeakyRelu) {
    return x > T(0) ? x : x * param;
  } else if constexpr (op == Activation::Elu) {
    const T negative = M::expm1(x) * param;
    return x > T(0) ? x : negative;  // NaN takes the negative side, which keeps it NaN
  } else {
    static_assert(op == Activation::Hardswish);
    T clipped = x + T(3);
    clipped = clipped < T(0) ? T(0) : clipped;
    clipped = clipped > T(6) ? T(6) : clipped;
    return x * clipped / T(6);
  }
}

// The gradient dy * op'(s), s the forward's output (sigmoid, tanh) or input (the others).
template <Activation op, class T>
[[gnu::always_inline]] inline T backward_value(T dy, T s, T param) {
  using M = MathFor<T>;
  if constexpr (op == Activation::Sigmoid) {
    return dy * (T(1) - s) * s;
  } else if constexpr (op == Activation::Tanh) {
    return dy * (T(1) - s * s);
  } else if constexpr (op == Activation::Gelu) {
    const T cdf = T(0.5) * (T(1) + M::erf(s * T(kSqrtHalf)));
    const T pdf = M::exp(T(-0.5) * s * s) * T(kInvSqrt2Pi);
    return dy * (cdf + s * pdf);
  } else if constexpr (op == Activation::GeluTanh) {
    const T square = s * s;
    const T t = M::tanh(T(kSqrt2OverPi) * (s + T(kGeluCubic) * square * s));
    const T inner_derivative = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * square);
    return dy * (T(0.5) * (T(1) + t) + T(0.5) * s * (T(1) - t * t) * inner_derivative);
  } else if constexpr (op == Activation::Silu) {
    const T sigmoid = T(1) / (T(1) + M::exp(-s));
    return dy * sigmoid * (T(1) + s * (T(1) - sigmoid));
  } else if constexpr (op == Activation::LeakyRelu) {
    return s > T(0) ? dy : dy * param;
  } else if constexpr (op == Activation::Elu) {
    const T negative = dy * param * M::exp(s);
    return s > T(0) ? dy : negative;
  } else {
    static_assert(op == Activation::Hardswish);
    const T middle = dy * (s / T(3) + T(0.5));
    return s < T(-3) ? T(0) : (s < T(3) ? middle : dy);  // at exactly 3: dy (kernels/activation.h)
  }
}

// float loops are vectorised by `omp simd`; double ones are left to the compiler: most call the
// std:: functions, which do not vectorise (clang warns when a simd loop cannot be).
template <Activation op, class T>
[[gnu::always_inline]] inline void forward_loop(const T* x, T* y, int64_t n, T param) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = forward_value<op, T>(x[i], param);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = forward_value<op, T>(x[i], param);
  }
}

template <Activation op, class T>
[[gnu::always_inline]] inline void backward_loop(const T* dy, const T* s, T* dx, int64_t n, T param) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = backward_value<op, T>(dy[i], s[i], param);
  } else {
    for (int64_t i = 0; i < n; ++i) dx[i] = backward_value<op, T>(dy[i], s[i], param);
  }
}

// One cloned (AVX-512 / AVX2 / baseline) function per op, direction and type: target_clones
// cannot go on the templates themselves (see threading.h).
#define EMBER_ACTIVATION_RANGES(name, op)                                                                  \
  EMBER_VECTOR_CLONES void name##_forward_range(const float* x, float* y, int64_t n, float p) {           \
    forward_loop<op>(x, y, n, p);                                                                          \
  }                                                                                                        \
  EMBER_VECTOR_CLONES void name##_forward_range(const double* x, double* y, int64_t n, double p) {        \
    forward_loop<op>(x, y, n, p);                                                                          \
  }                                                                                                        \
  EMBER_VECTOR_CLONES void name##_backward_range(const float* dy, const float* s, float* dx, int64_t n,   \
                                                 float p) {                                                \
    backward_loop<op>(dy, s, dx, n, p);                                                                    \
  }                                                                                                        \
  EMBER_VECTOR_CLONES void name##_backward_range(const double* dy, const double* s, double* dx, int64_t n, \
                                                 double p) {                                               \
    backward_loop<op>(dy, s, dx, n, p);                                                                    \
  }
EMBER_ACTIVATION_RANGES(sigmoid, Activation::Sigmoid)
EMBER_ACTIVATION_RANGES(tanh, Activation::Tanh)
EMBER_ACTIVATION_RANGES(gelu, Activation::Gelu)
EMBER_ACTIVATION_RANGES(gelu_tanh, Activation::GeluTanh)
EMBER_ACTIVATION_RANGES(silu, Activation::Silu)
EMBER_ACTIVATION_RANGES(leaky_relu, Activation::LeakyRelu)
EMBER_ACTIVATION_RANGES(elu, Activation::Elu)
EMBER_ACTIVATION_RANGES(hardswish, Activation::Hardswish)
#undef EMBER_ACTIVATION_RANGES

// The transcendental activations cost ~10x relu per element: threads pay off on smaller tensors.
constexpr int64_t kParallelActivationElements = 1 << 14;

int activation_threads_for(int64_t n) {
  return (n >= kParallelActivationElements && !omp_in_parallel()) ? get_num_threads() : 1;
}

// Calls range(begin, end) over [0, n) split across the threads.
template <class Range>
void run_ranges(int64_t n, const Range& range) {
  parallel_ranges(n, activation_threads_for(n), range);
}

}  // namespace

template <class T>
void activation_forward(Activation op, double param, const T* x, T* y, int64_t n) {
  const T p = static_cast<T>(param);
#define EMBER_CASE(code, name)                                                                     \
  case code:                                                                                       \
    return run_ranges(n, [&](int64_t b, int64_t e) { name##_forward_range(x + b, y + b, e - b, p); });
  switch (op) {
    EMBER_CASE(Activation::Sigmoid, sigmoid)
    EMBER_CASE(Activation::Tanh, tanh)
    EMBER_CASE(Activation::Gelu, gelu)
    EMBER_CASE(Activation::GeluTanh, gelu_tanh)
    EMBER_CASE(Activation::Silu, silu)
    EMBER_CASE(Activation::LeakyRelu, leaky_relu)
    EMBER_CASE(Activation::Elu, elu)
    EMBER_CASE(Activation::Hardswish, hardswish)
  }
#undef EMBER_CASE
  throw Error(ember::detail::str("activation_forward: unknown activation code ", static_cast<int>(op)));
}

template <class T>
void activation_backward(Activation op, double param, const T* dy, const T* saved, T* dx, int64_t n) {
  const T p = static_cast<T>(param);
#define EMBER_CASE(code, name)                                                                              \
  case code:                                                                                                \
    return run_ranges(n, [&](int64_t b, int64_t e) { name##_backward_range(dy + b, saved + b, dx + b, e - b, p); });
  switch (op) {
    EMBER_CASE(Activation::Sigmoid, sigmoid)
    EMBER_CASE(Activation::Tanh, tanh)
    EMBER_CASE(Activation::Gelu, gelu)
    EMBER_CASE(Activation::GeluTanh, gelu_tanh)
    EMBER_CASE(Activation::Silu, silu)
    EMBER_CASE(Activation::LeakyRelu, leaky_relu)
    EMBER_CASE(Activation::Elu, elu)
    EMBER_CASE(Activation::Hardswish, hardswish)
  }
#undef EMBER_CASE
  throw Error(ember::detail::str("activation_backward: unknown activation code ", static_cast<int>(op)));
}

template void activation_forward<float>(Activation, double, const float*, float*, int64_t);
template void activation_forward<double>(Activation, double, const double*, double*, int64_t);
template void activation_backward<float>(Activation, double, const float*, const float*, float*, int64_t);
template void activation_backward<double>(Activation, double, const double*, const double*, double*, int64_t);

template <class T>
void relu_forward(const T* x, T* y, int64_t n) {
  parallel_ranges(n, threads_for(n),
                  [&](int64_t begin, int64_t end) { relu_forward_range(x + begin, y + begin, end - begin); });
}

template <class T>
void relu_backward(const T* dy, const T* y, T* dx, int64_t n) {
  parallel_ranges(n, threads_for(n), [&](int64_t begin, int64_t end) {
    relu_backward_range(dy + begin, y + begin, dx + begin, end - begin);
  });
}

template void relu_forward<float>(const float*, float*, int64_t);
template void relu_forward<double>(const double*, double*, int64_t);
template void relu_backward<float>(const float*, const float*, float*, int64_t);
template void relu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace ember::kernels::cpu
