// binary (every BinaryOp), unary (every UnaryOp), where and clamp (forward and backward) on the emulator against reference
// loops written here (the CPU versions live in core/ops_elementwise.cpp, which these tests do not
// link): every dtype the kernels take, 0-dim, empty and multi-block shapes, broadcast (stride 0)
// and transposed / padded / step-2 inputs, and non-contiguous outputs whose gaps must stay
// untouched.
#include "emulated_checks.h"

#include <algorithm>
#include <sstream>

#include "ember/common/error.h"
#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cuda/elementwise.h"

namespace cuda = ember::kernels::cuda;
namespace cpu = ember::kernels::cpu;
using ember::kernels::BinaryOp;
using ember::kernels::StridedLoop;
using ember::kernels::UnaryOp;
using namespace ember::test;  // the shared checks and dtype tags of emulated_checks.h
using Shape = std::vector<int64_t>;

namespace {

// How an operand lies in memory over the broadcast shape.
enum class Kind { Contiguous, Padded, Transposed, Step2, BroadcastAll, BroadcastEven, BroadcastOdd };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Contiguous: return "contiguous";
    case Kind::Padded: return "padded";
    case Kind::Transposed: return "transposed";
    case Kind::Step2: return "step-2";
    case Kind::BroadcastAll: return "broadcast scalar";
    case Kind::BroadcastEven: return "broadcast even dims";
    default: return "broadcast odd dims";
  }
}

struct Operand {
  std::vector<int64_t> strides;
  size_t extent = 1;  // elements of its buffer
};

Operand make_operand(const Shape& sizes, Kind kind) {
  const size_t n = sizes.size();
  Operand op;
  op.strides.assign(n, 0);
  int64_t step = kind == Kind::Step2 ? 2 : 1;
  switch (kind) {
    case Kind::Contiguous:
    case Kind::Step2:
      for (size_t d = n; d-- > 0;) op.strides[d] = step, step *= sizes[d];
      break;
    case Kind::Padded:  // every row is followed by a gap of 1 or 2 elements
      for (size_t d = n; d-- > 0;) op.strides[d] = step, step *= sizes[d] + 1 + static_cast<int64_t>(d % 2);
      break;
    case Kind::Transposed:  // column-major: the first dim is the fastest
      for (size_t d = 0; d < n; ++d) op.strides[d] = step, step *= sizes[d];
      break;
    case Kind::BroadcastAll:
      break;
    case Kind::BroadcastEven:
    case Kind::BroadcastOdd:  // the other dims dense among themselves
      for (size_t d = n; d-- > 0;) {
        const bool broadcast = (d % 2 == 0) == (kind == Kind::BroadcastEven);
        if (!broadcast) op.strides[d] = step, step *= sizes[d];
      }
      break;
  }
  op.extent = ember::test::storage_extent(sizes, op.strides);
  return op;
}

std::string describe(const Shape& sizes, std::initializer_list<Kind> kinds) {
  std::ostringstream out;
  out << "shape [";
  for (size_t d = 0; d < sizes.size(); ++d) out << (d ? ", " : "") << sizes[d];
  out << "], layouts";
  for (Kind k : kinds) out << " " << kind_name(k) << ";";
  return out.str();
}

// Shapes: 0-dim, one element, one flat multi-block run, size-1 dims among others, a 3-D and a
// 6-D shape (several blocks once strided), and an empty one (nothing may be written).
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {{}, {1}, {1100}, {4, 1, 37}, {3, 5, 23}, {2, 3, 2, 3, 2, 5}, {0, 7}};
  return all;
}

template <class T>
std::vector<T> uniform(size_t n, std::mt19937_64& rng, double lo, double hi) {
  return ember::test::random_vector<T>(n, rng, lo, hi);
}

// Floats on a grid of quarters (so that ties happen), with some NaNs of the given sign.
template <class T>
std::vector<T> quarters_with_nans(size_t n, std::mt19937_64& rng, bool negative_nan) {
  std::vector<T> v(n);
  std::uniform_int_distribution<int> k(-8, 7), pick(0, 19);
  const T nan = negative_nan ? -std::numeric_limits<T>::quiet_NaN() : std::numeric_limits<T>::quiet_NaN();
  for (auto& x : v) x = pick(rng) == 0 ? nan : static_cast<T>(k(rng)) / T(4);
  return v;
}

// Inputs for `op` of dtype D: operand 0 (a) or 1 (b).
template <class D>
std::vector<typename D::type> binary_input(BinaryOp op, int which, size_t n, std::mt19937_64& rng) {
  using T = typename D::type;
  if constexpr (D::code == ember::kernels::kDTypeBool) {
    return uniform<T>(n, rng, 0, 2);
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Mul: return uniform<T>(n, rng, -2, 2);
      case BinaryOp::Div: {
        if (which == 0) return uniform<T>(n, rng, -2, 2);
        auto v = uniform<T>(n, rng, 0.5, 2);
        for (size_t i = 0; i < n; i += 3) v[i] = -v[i];
        return v;
      }
      case BinaryOp::Pow: return which == 0 ? uniform<T>(n, rng, 0.25, 4) : uniform<T>(n, rng, -2.5, 2.5);
      default: return quarters_with_nans<T>(n, rng, which == 0);  // max, min, comparisons
    }
  } else {
    const bool small = op >= BinaryOp::Maximum;  // ties for max, min and the comparisons
    if constexpr (std::is_same_v<T, int64_t>) return small ? uniform<T>(n, rng, -3, 3) : uniform<T>(n, rng, -1000, 1000);
    else return small ? uniform<T>(n, rng, 0, 4) : uniform<T>(n, rng, 0, 256);
  }
}

// The CPU semantics of core/ops_elementwise.cpp in the compute type T.
template <class T>
T reference_arithmetic(BinaryOp op, T x, T y, double alpha) {
  switch (op) {
    case BinaryOp::Add: return static_cast<T>(x + static_cast<T>(alpha) * y);
    case BinaryOp::Mul: return static_cast<T>(x * y);
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<T>) return x / y;
      break;
    case BinaryOp::Pow:
      if constexpr (std::is_floating_point_v<T>) return std::pow(x, y);
      break;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum:
      if (x != x) return x;
      if (y != y) return y;
      return op == BinaryOp::Maximum ? (x > y ? x : y) : (x < y ? x : y);
    default: break;
  }
  FAIL("no arithmetic reference for op " << static_cast<int>(op));
  return T(0);
}

template <class T>
uint8_t reference_comparison(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    default: FAIL("not a comparison: " << static_cast<int>(op)); return 0;
  }
}

// Where the reference is NaN, the kernel's NaN has the same sign: Maximum / Minimum pass on the
// NaN operand itself (a's when both are NaN; a's NaNs are negative, b's positive here).
template <class O>
bool same_nan_signs(const std::vector<O>& got, const std::vector<O>& want, const std::string& what) {
  if constexpr (std::is_floating_point_v<O>) {
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i]) && std::isnan(got[i]) && std::signbit(want[i]) != std::signbit(got[i])) {
        FAIL_CHECK(what << ": element " << i << " is a NaN of the other sign");
        return false;
      }
    }
  }
  (void)got, (void)want, (void)what;
  return true;
}

const char* op_name(BinaryOp op) {
  static const char* names[] = {"add", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(op)];
}

template <class D>
void check_binary(BinaryOp op, double alpha, const Shape& sizes, Kind ko, Kind ka, Kind kb, std::mt19937_64& rng) {
  using T = typename D::type;
  const Operand out = make_operand(sizes, ko), a = make_operand(sizes, ka), b = make_operand(sizes, kb);
  const std::vector<T> av = binary_input<D>(op, 0, a.extent, rng), bv = binary_input<D>(op, 1, b.extent, rng);
  const std::string what = std::string(op_name(op)) + " " + dtype_name(D::code) + " alpha " +
                           std::to_string(alpha) + ", " + describe(sizes, {ko, ka, kb});
  const StridedLoop<3> loop{sizes, {out.strides, a.strides, b.strides}};
  auto run = [&](auto out_tag) {
    using Out = decltype(out_tag);
    std::vector<Out> want = poisoned<Out>(out.extent), got = poisoned<Out>(out.extent);
    for_each_index(sizes, [&](const Shape& i) {
      const T x = av[offset_of(i, a.strides)], y = bv[offset_of(i, b.strides)];
      if constexpr (std::is_same_v<Out, T> && !std::is_same_v<T, uint8_t>) {
        want[offset_of(i, out.strides)] = reference_arithmetic<T>(op, x, y, alpha);
      } else if constexpr (std::is_same_v<T, uint8_t>) {  // uint8 and bool: arithmetic and comparisons both write uint8
        want[offset_of(i, out.strides)] = ember::kernels::is_comparison(op) ? reference_comparison<T>(op, x, y)
                                                                  : reference_arithmetic<T>(op, x, y, alpha);
      } else {
        want[offset_of(i, out.strides)] = reference_comparison<T>(op, x, y);
      }
    });
    cuda::binary(op, D::code, got.data(), av.data(), bv.data(), loop, alpha, ember::test::default_stream(),
                 op_name(op));
    CHECK(matches(got, want, what, ember::test::tolerance<Out>(), /*nan_equal=*/true));
    CHECK(same_nan_signs(got, want, what));
    // The CPU twin, on the same inputs and layout.
    std::vector<Out> got_cpu = poisoned<Out>(out.extent);
    cpu::binary(op, D::code, got_cpu.data(), av.data(), bv.data(), loop, alpha, op_name(op));
    CHECK(matches(got_cpu, want, "cpu " + what, ember::test::tolerance<Out>(), /*nan_equal=*/true));
  };
  if (ember::kernels::is_comparison(op)) run(uint8_t{});
  else run(T{});
}

struct Layout3 {
  Kind out, a, b;
};
const std::vector<Layout3> binary_layouts = {
    {Kind::Contiguous, Kind::Contiguous, Kind::Contiguous},     {Kind::Contiguous, Kind::Contiguous, Kind::BroadcastAll},
    {Kind::Contiguous, Kind::BroadcastAll, Kind::Contiguous},   {Kind::Padded, Kind::Transposed, Kind::BroadcastEven},
    {Kind::Transposed, Kind::Step2, Kind::Padded},              {Kind::Step2, Kind::BroadcastOdd, Kind::Transposed},
    {Kind::Contiguous, Kind::BroadcastEven, Kind::BroadcastOdd},
};

}  // namespace

TEMPLATE_TEST_CASE("emulated binary ops match the reference for every op and dtype and layout",
                   "[cuda-emulated][elementwise]", F32, F64, I64, U8, Bool) {
  using T = typename TestType::type;
  std::mt19937_64 rng(20261203 + TestType::code);
  std::vector<BinaryOp> ops = {BinaryOp::Add,     BinaryOp::Mul, BinaryOp::Maximum, BinaryOp::Minimum,
                               BinaryOp::Eq,      BinaryOp::Ne,  BinaryOp::Lt,      BinaryOp::Le,
                               BinaryOp::Gt,      BinaryOp::Ge};
  if constexpr (std::is_floating_point_v<T>) ops.insert(ops.end(), {BinaryOp::Div, BinaryOp::Pow});
  for (BinaryOp op : ops) {
    // Add's alpha (sub passes a negative one); integers take whole alphas, unsigned ones positive.
    std::vector<double> alphas = {1.0};
    if (op == BinaryOp::Add) {
      if constexpr (std::is_floating_point_v<T>) alphas.push_back(-0.75);
      else if constexpr (std::is_same_v<T, int64_t>) alphas.push_back(-3.0);
      else if constexpr (TestType::code == ember::kernels::kDTypeUInt8) alphas.push_back(3.0);
    }
    for (double alpha : alphas) {
      for (const Shape& sizes : shapes()) {
        for (const Layout3& l : binary_layouts) check_binary<TestType>(op, alpha, sizes, l.out, l.a, l.b, rng);
      }
    }
  }
}

namespace {

const char* op_name(UnaryOp op) {
  static const char* names[] = {"neg", "exp", "log", "sqrt", "abs", "pow", "erf", "tanh", "sigmoid"};
  return names[static_cast<int>(op)];
}

template <class T>
T reference_unary(UnaryOp op, T x, double scalar) {
  switch (op) {
    case UnaryOp::Neg: return static_cast<T>(-x);
    case UnaryOp::Abs: return x < 0 ? static_cast<T>(-x) : x;
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::Exp: return std::exp(x);
      case UnaryOp::Log: return std::log(x);
      case UnaryOp::Sqrt: return std::sqrt(x);
      case UnaryOp::PowScalar: return std::pow(x, static_cast<T>(scalar));
      case UnaryOp::Erf: return std::erf(x);
      case UnaryOp::Tanh: return std::tanh(x);
      case UnaryOp::Sigmoid: return T(1) / (T(1) + std::exp(-x));
      default: break;
    }
  }
  FAIL("no unary reference for op " << static_cast<int>(op));
  return T(0);
}

template <class D>
std::vector<typename D::type> unary_input(UnaryOp op, size_t n, std::mt19937_64& rng) {
  using T = typename D::type;
  if constexpr (D::code == ember::kernels::kDTypeBool) return uniform<T>(n, rng, 0, 2);
  else if constexpr (std::is_same_v<T, uint8_t>) return uniform<T>(n, rng, 0, 256);
  else if constexpr (std::is_same_v<T, int64_t>) return uniform<T>(n, rng, -1000, 1000);
  else {
    switch (op) {
      case UnaryOp::Exp: return uniform<T>(n, rng, -3, 3);
      case UnaryOp::Log: return uniform<T>(n, rng, 0.01, 10);
      case UnaryOp::Sqrt: return uniform<T>(n, rng, 0, 10);
      case UnaryOp::PowScalar: return uniform<T>(n, rng, 0.25, 4);
      case UnaryOp::Erf:
      case UnaryOp::Tanh:
      case UnaryOp::Sigmoid: return uniform<T>(n, rng, -6, 6);
      default: return uniform<T>(n, rng, -2, 2);
    }
  }
}

template <class D>
void check_unary(UnaryOp op, double scalar, const Shape& sizes, Kind ko, Kind ka, std::mt19937_64& rng) {
  using T = typename D::type;
  const Operand out = make_operand(sizes, ko), a = make_operand(sizes, ka);
  const std::vector<T> av = unary_input<D>(op, a.extent, rng);
  std::vector<T> want = poisoned<T>(out.extent), got = poisoned<T>(out.extent);
  for_each_index(sizes, [&](const Shape& i) {
    want[offset_of(i, out.strides)] = reference_unary<T>(op, av[offset_of(i, a.strides)], scalar);
  });
  const StridedLoop<2> loop{sizes, {out.strides, a.strides}};
  cuda::unary(op, D::code, got.data(), av.data(), loop, scalar, ember::test::default_stream(), op_name(op));
  const std::string what = std::string(op_name(op)) + " " + dtype_name(D::code) + " scalar " +
                           std::to_string(scalar) + ", " + describe(sizes, {ko, ka});
  CHECK(matches(got, want, what, ember::test::tolerance<T>(), /*nan_equal=*/true));
  std::vector<T> got_cpu = poisoned<T>(out.extent);  // the CPU twin
  cpu::unary(op, D::code, got_cpu.data(), av.data(), loop, scalar, op_name(op));
  CHECK(matches(got_cpu, want, "cpu " + what, ember::test::tolerance<T>(), /*nan_equal=*/true));
}

struct Layout2 {
  Kind out, a;
};
const std::vector<Layout2> unary_layouts = {{Kind::Contiguous, Kind::Contiguous}, {Kind::Contiguous, Kind::BroadcastAll},
                                            {Kind::Padded, Kind::Transposed},     {Kind::Transposed, Kind::Step2},
                                            {Kind::Step2, Kind::BroadcastEven}};

}  // namespace

TEMPLATE_TEST_CASE("emulated unary ops match the reference for every op and dtype and layout",
                   "[cuda-emulated][elementwise]", F32, F64, I64, U8, Bool) {
  using T = typename TestType::type;
  std::mt19937_64 rng(7 + TestType::code);
  // (op, scalar): neg is refused for bool by core; the floating ops need a floating dtype.
  std::vector<std::pair<UnaryOp, double>> ops = {{UnaryOp::Abs, 0.0}};
  if constexpr (TestType::code != ember::kernels::kDTypeBool) ops.push_back({UnaryOp::Neg, 0.0});
  if constexpr (std::is_floating_point_v<T>) {
    ops.insert(ops.end(), {{UnaryOp::Exp, 0.0},
                           {UnaryOp::Log, 0.0},
                           {UnaryOp::Sqrt, 0.0},
                           {UnaryOp::PowScalar, 2.0},
                           {UnaryOp::PowScalar, 0.5},
                           {UnaryOp::PowScalar, -1.5},
                           {UnaryOp::PowScalar, 3.0},
                           {UnaryOp::Erf, 0.0},
                           {UnaryOp::Tanh, 0.0},
                           {UnaryOp::Sigmoid, 0.0}});
  }
  for (auto [op, scalar] : ops) {
    for (const Shape& sizes : shapes()) {
      for (const Layout2& l : unary_layouts) check_unary<TestType>(op, scalar, sizes, l.out, l.a, rng);
    }
  }
}

namespace {

struct Layout4 {
  Kind out, condition, a, b;
};
const std::vector<Layout4> where_layouts = {
    {Kind::Contiguous, Kind::Contiguous, Kind::Contiguous, Kind::Contiguous},
    {Kind::Contiguous, Kind::BroadcastAll, Kind::Contiguous, Kind::Contiguous},
    {Kind::Contiguous, Kind::Contiguous, Kind::BroadcastAll, Kind::BroadcastAll},
    {Kind::Padded, Kind::BroadcastEven, Kind::Transposed, Kind::BroadcastAll},
    {Kind::Transposed, Kind::Step2, Kind::BroadcastOdd, Kind::Padded},
    {Kind::Step2, Kind::Transposed, Kind::Contiguous, Kind::BroadcastEven},
};

}  // namespace

TEMPLATE_TEST_CASE("emulated where selects as the reference with bool and uint8 conditions over every layout",
                   "[cuda-emulated][elementwise]", F32, F64, I64, U8, Bool) {
  using T = typename TestType::type;
  std::mt19937_64 rng(99 + TestType::code);
  for (bool uint8_condition : {false, true}) {
    for (const Shape& sizes : shapes()) {
      for (const Layout4& l : where_layouts) {
        const Operand out = make_operand(sizes, l.out), c = make_operand(sizes, l.condition);
        const Operand a = make_operand(sizes, l.a), b = make_operand(sizes, l.b);
        // uint8 conditions: any nonzero value is true.
        const auto cv = ember::test::random_vector<uint8_t>(c.extent, rng, 0, uint8_condition ? 4 : 2);
        const double lo = TestType::code == ember::kernels::kDTypeBool ? 0 : std::is_same_v<T, uint8_t> ? 0 : -100;
        const double hi = TestType::code == ember::kernels::kDTypeBool ? 2 : std::is_same_v<T, uint8_t> ? 256 : 100;
        const auto av = ember::test::random_vector<T>(a.extent, rng, lo, hi);
        const auto bv = ember::test::random_vector<T>(b.extent, rng, lo, hi);
        std::vector<T> want = poisoned<T>(out.extent), got = poisoned<T>(out.extent);
        for_each_index(sizes, [&](const Shape& i) {
          want[offset_of(i, out.strides)] =
              cv[offset_of(i, c.strides)] != 0 ? av[offset_of(i, a.strides)] : bv[offset_of(i, b.strides)];
        });
        const StridedLoop<4> loop{sizes, {out.strides, c.strides, a.strides, b.strides}};
        cuda::where(TestType::code, got.data(), cv.data(), av.data(), bv.data(), loop, ember::test::default_stream());
        const std::string what = std::string("where ") + dtype_name(TestType::code) +
                                 (uint8_condition ? ", uint8 condition, " : ", bool condition, ") +
                                 describe(sizes, {l.out, l.condition, l.a, l.b});
        CHECK(matches(got, want, what, 0.0, /*nan_equal=*/true));
        std::vector<T> got_cpu = poisoned<T>(out.extent);  // the CPU twin
        cpu::where(TestType::code, got_cpu.data(), cv.data(), av.data(), bv.data(), loop);
        CHECK(matches(got_cpu, want, "cpu " + what, 0.0, /*nan_equal=*/true));
      }
    }
  }
}

TEMPLATE_TEST_CASE("emulated clamp and its backward match the reference for both, one or inverted bounds",
                   "[cuda-emulated][elementwise]", F32, F64, I64, U8) {
  using T = typename TestType::type;
  using Bounds = ember::kernels::ClampBounds<double>;
  std::mt19937_64 rng(131 + TestType::code);
  const double lo = std::is_same_v<T, uint8_t> ? 0 : -20, hi = std::is_same_v<T, uint8_t> ? 40 : 20;
  const double a = std::is_same_v<T, uint8_t> ? 10 : -5, b = std::is_same_v<T, uint8_t> ? 30 : 6;
  for (const Bounds& bounds : {Bounds{a, b, true, true}, Bounds{a, 0, true, false}, Bounds{0, b, false, true},
                               Bounds{b, a, true, true}}) {
    const ember::kernels::ClampBounds<T> typed{static_cast<T>(bounds.min), static_cast<T>(bounds.max), bounds.has_min,
                                               bounds.has_max};
    for (const Shape& sizes : shapes()) {
      for (const Layout3& l : binary_layouts) {
        const Operand out = make_operand(sizes, l.out), x = make_operand(sizes, l.a), g = make_operand(sizes, l.b);
        // Integers in [lo, hi) hit the bounds exactly; the floats get a NaN now and then.
        std::vector<T> xv = ember::test::random_vector<T>(x.extent, rng, lo, hi);
        if constexpr (std::is_floating_point_v<T>) {
          for (size_t i = 0; i < xv.size(); i += 7) xv[i] = std::nearbyint(xv[i]);
          if (!xv.empty()) xv[xv.size() / 2] = std::numeric_limits<T>::quiet_NaN();
        }
        std::vector<T> want = poisoned<T>(out.extent), got = poisoned<T>(out.extent);
        for_each_index(sizes, [&](const Shape& i) {
          T v = xv[offset_of(i, x.strides)];
          if (v == v) {
            if (bounds.has_min && v < typed.min) v = typed.min;
            if (bounds.has_max && v > typed.max) v = typed.max;
          }
          want[offset_of(i, out.strides)] = v;
        });
        const std::string what = std::string("clamp ") + dtype_name(TestType::code) + " [" +
                                 (bounds.has_min ? std::to_string(bounds.min) : "none") + ", " +
                                 (bounds.has_max ? std::to_string(bounds.max) : "none") + "], " +
                                 describe(sizes, {l.out, l.a});
        const StridedLoop<2> loop2{sizes, {out.strides, x.strides}};
        cuda::clamp(TestType::code, got.data(), xv.data(), loop2, bounds, ember::test::default_stream());
        CHECK(matches(got, want, what, 0.0, /*nan_equal=*/true));
        std::vector<T> got_cpu = poisoned<T>(out.extent);  // the CPU twin
        cpu::clamp(TestType::code, got_cpu.data(), xv.data(), loop2, bounds);
        CHECK(matches(got_cpu, want, "cpu " + what, 0.0, /*nan_equal=*/true));
        if constexpr (std::is_floating_point_v<T>) {
          const std::vector<T> gv = ember::test::random_vector<T>(g.extent, rng);
          std::vector<T> want_grad = poisoned<T>(out.extent), got_grad = poisoned<T>(out.extent);
          for_each_index(sizes, [&](const Shape& i) {
            const T v = xv[offset_of(i, x.strides)];
            const bool inside = (!bounds.has_min || v >= typed.min) && (!bounds.has_max || v <= typed.max);
            want_grad[offset_of(i, out.strides)] = inside ? gv[offset_of(i, g.strides)] : T(0);
          });
          const StridedLoop<3> loop3{sizes, {out.strides, g.strides, x.strides}};
          cuda::clamp_backward(TestType::code, got_grad.data(), gv.data(), xv.data(), loop3, bounds,
                               ember::test::default_stream());
          CHECK(matches(got_grad, want_grad, "backward " + what, 0.0, /*nan_equal=*/true));
          std::vector<T> got_grad_cpu = poisoned<T>(out.extent);
          cpu::clamp_backward(TestType::code, got_grad_cpu.data(), gv.data(), xv.data(), loop3, bounds);
          CHECK(matches(got_grad_cpu, want_grad, "cpu backward " + what, 0.0, /*nan_equal=*/true));
        }
      }
    }
  }
}

TEST_CASE("emulated element-wise kernels throw for a dtype without a kernel and for too many dims",
          "[cuda-emulated][elementwise]") {
  std::vector<double> buffer(64, 1.0);
  const Shape unit = {1};
  const StridedLoop<3> loop3{{4}, {unit, unit, unit}};
  const StridedLoop<2> loop2{{4}, {unit, unit}};
  for (int code : {ember::kernels::kDTypeInt64, ember::kernels::kDTypeUInt8, ember::kernels::kDTypeBool}) {
    for (BinaryOp op : {BinaryOp::Div, BinaryOp::Pow}) {
      CHECK_THROWS_AS(cuda::binary(op, code, buffer.data(), buffer.data(), buffer.data(), loop3, 1.0, nullptr, "div"),
                      ember::Error);
      CHECK_THROWS_AS(cpu::binary(op, code, buffer.data(), buffer.data(), buffer.data(), loop3, 1.0, "div"),
                      ember::Error);
    }
    for (UnaryOp op : {UnaryOp::Exp, UnaryOp::Log, UnaryOp::Sqrt, UnaryOp::PowScalar}) {
      CHECK_THROWS_AS(cuda::unary(op, code, buffer.data(), buffer.data(), loop2, 2.0, nullptr, "exp"), ember::Error);
      CHECK_THROWS_AS(cpu::unary(op, code, buffer.data(), buffer.data(), loop2, 2.0, "exp"), ember::Error);
    }
  }
  constexpr int kFloat16 = 5;  // core's reserved dtype: no kernel computes in it
  CHECK_THROWS_WITH(cuda::binary(BinaryOp::Add, kFloat16, buffer.data(), buffer.data(), buffer.data(), loop3, 1.0,
                                 nullptr, "add"),
                    Catch::Contains("add"));
  // Nine dims that no two merge (padded rows everywhere) exceed kMaxDims.
  const Shape nine(9, 2);
  const Operand padded = make_operand(nine, Kind::Padded);
  std::vector<float> big(padded.extent, 1.0f);
  const StridedLoop<2> loop9{nine, {padded.strides, padded.strides}};
  CHECK_THROWS_WITH(cuda::unary(UnaryOp::Neg, ember::kernels::kDTypeFloat32, big.data(), big.data(), loop9, 0.0, nullptr, "neg"),
                    Catch::Contains("neg"));
}
