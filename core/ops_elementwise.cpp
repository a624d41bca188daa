// Element-wise tensor ops with broadcasting and dtype promotion, and their gradients.
#include <cmath>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/elementwise.h"
#ifdef EMBER_WITH_CUDA
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda/copy.h"
#include "ember/kernels/cuda/elementwise.h"
#endif

namespace ember {

using autograd::SavedTensor;

#ifdef EMBER_WITH_CUDA
using kernels::cuda::BinaryOp;
using kernels::cuda::UnaryOp;
static_assert(static_cast<int>(DType::Float32) == kernels::cuda::kDTypeFloat32 &&
                  static_cast<int>(DType::Float64) == kernels::cuda::kDTypeFloat64 &&
                  static_cast<int>(DType::Int64) == kernels::cuda::kDTypeInt64 &&
                  static_cast<int>(DType::UInt8) == kernels::cuda::kDTypeUInt8 &&
                  static_cast<int>(DType::Bool) == kernels::cuda::kDTypeBool,
              "kernels/cuda/copy.h's dtype codes follow core's DType");
#else
// A build without CUDA names the kernel op codes only for its (throwing) CUDA branch.
enum class BinaryOp { Add, Mul, Div, Pow, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge };
enum class UnaryOp { Neg, Exp, Log, Sqrt, Abs, PowScalar };
#endif

namespace detail {

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t range = std::max<int64_t>(ndim, 1);  // a 0-dim tensor accepts dim 0 and -1
  EMBER_CHECK(dim >= -range && dim < range, op, ": dim ", dim, " is out of range for a tensor with ",
              ndim, " dims (expected [", -range, ", ", range - 1, "])");
  return dim < 0 ? dim + range : dim;
}

}  // namespace detail

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t sa = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    int64_t sb = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", a, " and ", b, " cannot be broadcast");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

DType promote_types(DType a, DType b) {
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool: return 0;
      case DType::UInt8: return 1;
      case DType::Int64: return 2;
      case DType::Float32: return 3;
      case DType::Float64: return 4;
      default: return 5;
    }
  };
  return rank(a) >= rank(b) ? a : b;
}

namespace {

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.defined() && b.defined(), op, ": called with an undefined tensor");
  EMBER_CHECK(a.device() == b.device(), op, ": expected all tensors on the same device, got ",
              a.device(), " and ", b.device());
}

#ifndef EMBER_WITH_CUDA
[[noreturn]] void no_cuda_build(const char* op) {
  throw Error(detail::str(op, ": got a CUDA tensor, but this build of ember has no CUDA support "
                          "(configured with EMBER_CUDA=OFF or without nvcc)"));
}
#endif

// A gradient of the broadcast output reduced to one input's shape and dtype.
Tensor grad_for(const Tensor& grad, const Shape& sizes, DType dtype) {
  return sum_to(grad, sizes).to(dtype);
}

// out = f(a, b) over the broadcast shape, computing in `compute` and storing `out_dtype` (the
// compute dtype, or bool for a comparison). On CUDA the kernel op `code` computes f; `alpha` is
// Add's scale of b.
template <class F>
Tensor binary_loop(const char* op, const Tensor& a, const Tensor& b, DType compute, DType out_dtype,
                   BinaryOp code, double alpha, F f) {
  check_same_device(op, a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor x = a.dtype() == compute ? a : a.detach().to(compute);
  Tensor y = b.dtype() == compute ? b : b.detach().to(compute);
  Tensor out = empty(shape, {.dtype = out_dtype, .device = a.device()});
  Tensor xe = x.detach().expand(shape), ye = y.detach().expand(shape);
  kernels::cpu::StridedLoop<3> loop{shape, {out.strides(), xe.strides(), ye.strides()}};
  if (!a.device().is_cpu()) {
#ifdef EMBER_WITH_CUDA
    int device = a.device().index();
    cuda::DeviceGuard guard(device);
    kernels::cuda::binary(code, static_cast<int>(compute), out.data_ptr(), xe.data_ptr(), ye.data_ptr(), loop,
                          alpha, cuda::current_stream(device), op);
#else
    (void)code, (void)alpha;
    no_cuda_build(op);
#endif
    return out;
  }
  visit_dtype(compute, op, [&](auto compute_tag) {
    using T = typename decltype(compute_tag)::type;
    visit_dtype(out_dtype, op, [&](auto out_tag) {
      using O = typename decltype(out_tag)::type;
      O* po = static_cast<O*>(out.data_ptr());
      const T* px = static_cast<const T*>(xe.data_ptr());
      const T* py = static_cast<const T*>(ye.data_ptr());
      kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
        O* o = po + off[0];
        const T* u = px + off[1];
        const T* v = py + off[2];
        if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
          for (int64_t k = 0; k < n; ++k) o[k] = static_cast<O>(f(u[k], v[k]));
        } else {
          for (int64_t k = 0; k < n; ++k) o[k * step[0]] = static_cast<O>(f(u[k * step[1]], v[k * step[2]]));
        }
      });
    });
  });
  return out;
}

// out = f(a) computed and stored in `compute`. On CUDA the kernel op `code` computes f;
// `scalar` is PowScalar's exponent.
template <class F>
Tensor unary_loop(const char* op, const Tensor& a, DType compute, UnaryOp code, double scalar, F f) {
  EMBER_CHECK(a.defined(), op, ": called on an undefined tensor");
  Tensor x = a.dtype() == compute ? a.detach() : a.detach().to(compute);
  Tensor out = empty(a.sizes(), {.dtype = compute, .device = a.device()});
  kernels::cpu::StridedLoop<2> loop{a.sizes(), {out.strides(), x.strides()}};
  if (!a.device().is_cpu()) {
#ifdef EMBER_WITH_CUDA
    int device = a.device().index();
    cuda::DeviceGuard guard(device);
    kernels::cuda::unary(code, static_cast<int>(compute), out.data_ptr(), x.data_ptr(), loop, scalar,
                         cuda::current_stream(device), op);
#else
    (void)code, (void)scalar;
    no_cuda_build(op);
#endif
    return out;
  }
  visit_dtype(compute, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = static_cast<T*>(out.data_ptr());
    const T* px = static_cast<const T*>(x.data_ptr());
    kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
      for (int64_t k = 0; k < n; ++k) po[off[0] + k * step[0]] = static_cast<T>(f(px[off[1] + k * step[1]]));
    });
  });
  return out;
}

DType floating_result(DType t) { return is_floating(t) ? t : kFloat32; }

// A 0-dim tensor holding `value`, typed so that combining it with `like` keeps like's dtype
// unless the value needs a float (as PyTorch treats Python scalars).
Tensor scalar_like(double value, const Tensor& like) {
  DType dtype = like.dtype();
  if (!is_floating(dtype) && value != std::floor(value)) dtype = kFloat32;
  if (dtype == kBool && value != 0.0 && value != 1.0) dtype = kInt64;
  return full({}, value, {.dtype = dtype, .device = like.device()});
}

}  // namespace

// --- Arithmetic --------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  check_same_device("add", a, b);
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = binary_loop("add", a, b, t, t, BinaryOp::Add, alpha, [alpha](auto x, auto y) { return x + static_cast<decltype(y)>(alpha) * y; });
  if (autograd::needs_grad({a, b})) {
    Shape sa = a.sizes(), sb = b.sizes();
    DType da = a.dtype(), db = b.dtype();
    autograd::record("add", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{grad_for(g[0], sa, da),
                                 grad_for(alpha == 1.0 ? g[0] : mul(g[0], alpha), sb, db)};
    });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) { return add(a, b, -alpha); }

Tensor mul(const Tensor& a, const Tensor& b) {
  check_same_device("mul", a, b);
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = binary_loop("mul", a, b, t, t, BinaryOp::Mul, 1.0, [](auto x, auto y) { return x * y; });
  if (autograd::needs_grad({a, b})) {
    SavedTensor saved_a(a), saved_b(b);
    bool need_a = a.requires_grad(), need_b = b.requires_grad();
    autograd::record("mul", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack("mul"), y = saved_b.unpack("mul");
      Tensor ga, gb;
      if (need_a) ga = grad_for(mul(g[0], y), x.sizes(), x.dtype());
      if (need_b) gb = grad_for(mul(g[0], x), y.sizes(), y.dtype());
      return std::vector<Tensor>{ga, gb};
    });
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  check_same_device("div", a, b);
  DType t = floating_result(promote_types(a.dtype(), b.dtype()));
  Tensor out = binary_loop("div", a, b, t, t, BinaryOp::Div, 1.0, [](auto x, auto y) { return x / y; });
  if (autograd::needs_grad({a, b})) {
    SavedTensor saved_a(a), saved_b(b);
    bool need_a = a.requires_grad(), need_b = b.requires_grad();
    autograd::record("div", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack("div"), y = saved_b.unpack("div");
      Tensor ga, gb;
      if (need_a) ga = grad_for(div(g[0], y), x.sizes(), x.dtype());
      if (need_b) gb = grad_for(neg(div(mul(g[0], x), mul(y, y))), y.sizes(), y.dtype());
      return std::vector<Tensor>{ga, gb};
    });
  }
  return out;
}

Tensor add(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor sub(const Tensor& a, double b) { return add(a, scalar_like(-b, a)); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(b, a)); }
Tensor div(const Tensor& a, double b) { return div(a, scalar_like(b, a)); }

Tensor pow(const Tensor& a, double exponent) {
  DType t = floating_result(a.dtype());
  Tensor out = unary_loop("pow", a, t, UnaryOp::PowScalar, exponent, [exponent](auto x) { return std::pow(x, static_cast<decltype(x)>(exponent)); });
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    autograd::record("pow", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack("pow");
      return std::vector<Tensor>{exponent == 0.0 ? zeros_like(x) : mul(g[0], mul(pow(x, exponent - 1.0), exponent))};
    });
  }
  return out;
}

Tensor pow(const Tensor& a, const Tensor& exponent) {
  check_same_device("pow", a, exponent);
  DType t = floating_result(promote_types(a.dtype(), exponent.dtype()));
  Tensor out = binary_loop("pow", a, exponent, t, t, BinaryOp::Pow, 1.0, [](auto x, auto y) { return std::pow(x, y); });
  if (autograd::needs_grad({a, exponent})) {
    SavedTensor saved_a(a), saved_e(exponent), saved_out(out);
    bool need_a = a.requires_grad(), need_e = exponent.requires_grad();
    autograd::record("pow", {a, exponent}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack("pow"), e = saved_e.unpack("pow");
      Tensor ga, ge;
      if (need_a) ga = grad_for(mul(g[0], mul(e, pow(x, sub(e, 1.0)))), x.sizes(), x.dtype());
      if (need_e) ge = grad_for(mul(g[0], mul(saved_out.unpack("pow"), log(x))), e.sizes(), e.dtype());
      return std::vector<Tensor>{ga, ge};
    });
  }
  return out;
}

namespace {

// maximum / minimum: the gradient goes to the chosen side, split evenly on ties (as PyTorch).
Tensor extremum(const char* op, const Tensor& a, const Tensor& b, bool take_max) {
  check_same_device(op, a, b);
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = binary_loop(op, a, b, t, t, take_max ? BinaryOp::Maximum : BinaryOp::Minimum, 1.0, [take_max](auto x, auto y) {
    if (x != x) return x;  // NaN propagates
    if (y != y) return y;
    return take_max ? (x > y ? x : y) : (x < y ? x : y);
  });
  if (autograd::needs_grad({a, b})) {
    SavedTensor saved_a(a), saved_b(b);
    autograd::record(op, {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack(op), y = saved_b.unpack(op);
      Tensor wins = (take_max ? gt(x, y) : lt(x, y)).to(g[0].dtype());
      Tensor ties = mul(eq(x, y).to(g[0].dtype()), 0.5);
      Tensor share_a = add(wins, ties);
      Tensor share_b = sub(ones_like(share_a), share_a);
      return std::vector<Tensor>{grad_for(mul(g[0], share_a), x.sizes(), x.dtype()),
                                 grad_for(mul(g[0], share_b), y.sizes(), y.dtype())};
    });
  }
  return out;
}

}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extremum("maximum", a, b, true); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extremum("minimum", a, b, false); }

Tensor neg(const Tensor& a) {
  EMBER_CHECK(a.defined() && a.dtype() != kBool, "neg: negation of a bool tensor is not supported");
  Tensor out = unary_loop("neg", a, a.dtype(), UnaryOp::Neg, 0.0, [](auto x) { return -x; });
  if (autograd::needs_grad({a})) {
    autograd::record("neg", {a}, {&out}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{neg(g[0])}; });
  }
  return out;
}

Tensor exp(const Tensor& a) {
  Tensor out = unary_loop("exp", a, floating_result(a.dtype()), UnaryOp::Exp, 0.0, [](auto x) { return std::exp(x); });
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("exp", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{mul(g[0], saved_out.unpack("exp"))};
    });
  }
  return out;
}

Tensor log(const Tensor& a) {
  Tensor out = unary_loop("log", a, floating_result(a.dtype()), UnaryOp::Log, 0.0, [](auto x) { return std::log(x); });
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    autograd::record("log", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{div(g[0], saved_a.unpack("log"))};
    });
  }
  return out;
}

Tensor sqrt(const Tensor& a) {
  Tensor out = unary_loop("sqrt", a, floating_result(a.dtype()), UnaryOp::Sqrt, 0.0, [](auto x) { return std::sqrt(x); });
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("sqrt", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{div(g[0], mul(saved_out.unpack("sqrt"), 2.0))};
    });
  }
  return out;
}

Tensor abs(const Tensor& a) {
  Tensor out = unary_loop("abs", a, a.dtype(), UnaryOp::Abs, 0.0, [](auto x) { return x < 0 ? -x : x; });
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    autograd::record("abs", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor x = saved_a.unpack("abs");
      Tensor sign = sub(gt(x, 0.0).to(x.dtype()), lt(x, 0.0).to(x.dtype()));
      return std::vector<Tensor>{mul(g[0], sign)};
    });
  }
  return out;
}

// --- Comparisons and where -----------------------------------------------------------------

#define EMBER_COMPARISON(name, code, expr)                                                 \
  Tensor name(const Tensor& a, const Tensor& b) {                                          \
    check_same_device(#name, a, b);                                                        \
    return binary_loop(#name, a, b, promote_types(a.dtype(), b.dtype()), kBool, code, 1.0, \
                       [](auto x, auto y) { return static_cast<uint8_t>(expr); });         \
  }                                                                                        \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }
EMBER_COMPARISON(eq, BinaryOp::Eq, x == y)
EMBER_COMPARISON(ne, BinaryOp::Ne, x != y)
EMBER_COMPARISON(lt, BinaryOp::Lt, x < y)
EMBER_COMPARISON(le, BinaryOp::Le, x <= y)
EMBER_COMPARISON(gt, BinaryOp::Gt, x > y)
EMBER_COMPARISON(ge, BinaryOp::Ge, x >= y)
#undef EMBER_COMPARISON

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  check_same_device("where", condition, a);
  check_same_device("where", a, b);
  EMBER_CHECK(condition.dtype() == kBool || condition.dtype() == kUInt8,
              "where: condition must be a bool or uint8 tensor, got ", dtype_name(condition.dtype()));
  Shape shape = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  DType t = promote_types(a.dtype(), b.dtype());
  // where(c, a, b) = select per element; computed as one strided pass over four operands.
  Tensor x = a.detach().to(t).expand(shape), y = b.detach().to(t).expand(shape);
  Tensor c = condition.detach().expand(shape);
  Tensor out = empty(shape, {.dtype = t, .device = a.device()});
  kernels::cpu::StridedLoop<4> loop{shape, {out.strides(), c.strides(), x.strides(), y.strides()}};
  if (!a.device().is_cpu()) {
#ifdef EMBER_WITH_CUDA
    int device = a.device().index();
    cuda::DeviceGuard guard(device);
    kernels::cuda::where(static_cast<int>(t), out.data_ptr(), static_cast<const uint8_t*>(c.data_ptr()),
                         x.data_ptr(), y.data_ptr(), loop, cuda::current_stream(device));
#else
    no_cuda_build("where");
#endif
  } else {
    visit_dtype(t, "where", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* po = static_cast<T*>(out.data_ptr());
      const uint8_t* pc = static_cast<const uint8_t*>(c.data_ptr());
      const T* px = static_cast<const T*>(x.data_ptr());
      const T* py = static_cast<const T*>(y.data_ptr());
      kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
        for (int64_t k = 0; k < n; ++k) {
          po[off[0] + k * step[0]] = pc[off[1] + k * step[1]] ? px[off[2] + k * step[2]] : py[off[3] + k * step[3]];
        }
      });
    });
  }
  if (autograd::needs_grad({a, b})) {
    SavedTensor saved_c(condition);
    Shape sa = a.sizes(), sb = b.sizes();
    DType da = a.dtype(), db = b.dtype();
    autograd::record("where", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor cond = saved_c.unpack("where");
      Tensor zero = zeros({}, {.dtype = g[0].dtype(), .device = g[0].device()});
      return std::vector<Tensor>{grad_for(where(cond, g[0], zero), sa, da),
                                 grad_for(where(cond, zero, g[0]), sb, db)};
    });
  }
  return out;
}

// --- In-place --------------------------------------------------------------------------------

Tensor& Tensor::fill_(double value) {
  EMBER_CHECK(defined(), "fill_: called on an undefined tensor");
  autograd::detail::check_inplace(*this, "fill_");
  if (device().is_cpu()) {
    kernels::cpu::StridedLoop<1> loop{sizes(), {strides()}};
    visit_dtype(dtype(), "fill_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = static_cast<T*>(data_ptr());
      T v = dtype() == kBool ? static_cast<T>(value != 0.0) : static_cast<T>(value);
      kernels::cpu::for_each_strided(loop, [&](auto off, int64_t n, auto step) {
        for (int64_t k = 0; k < n; ++k) out[off[0] + k * step[0]] = v;
      });
    });
  } else {
#ifdef EMBER_WITH_CUDA
    if (is_contiguous()) {
      int index = device().index();
      cuda::DeviceGuard guard(index);
      kernels::cuda::fill(data_ptr(), static_cast<int>(dtype()), numel(), value, cuda::current_stream(index));
    } else {
      // One element on the device, broadcast by copy_'s strided kernel (stride 0) into this view.
      copy_(full({}, value, {.dtype = dtype(), .device = device()}));
    }
#else
    no_cuda_build("fill_");
#endif
  }
  storage()->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  autograd::detail::check_inplace(*this, "add_");
  Tensor sum = add(detach(), other.detach(), alpha);
  EMBER_CHECK(sum.sizes() == sizes(), "add_: the result shape ", sum.sizes(),
              " does not match the tensor's ", sizes());
  NoGradGuard no_grad;
  return copy_(sum);
}

Tensor& Tensor::mul_(double value) {
  autograd::detail::check_inplace(*this, "mul_");
  Tensor product = mul(detach(), value);
  NoGradGuard no_grad;
  return copy_(product);
}

Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::pow(double exponent) const { return ember::pow(*this, exponent); }

}  // namespace ember
