// Element-wise tensor ops with broadcasting and dtype promotion, and their gradients.
#include <cmath>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/copy.h"
#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cuda/copy.h"
#include "ember/kernels/cuda/elementwise.h"

namespace ember {

using autograd::SavedTensor;

using kernels::BinaryOp;
using kernels::UnaryOp;
static_assert(static_cast<int>(DType::Float32) == kernels::kDTypeFloat32 &&
                  static_cast<int>(DType::Float64) == kernels::kDTypeFloat64 &&
                  static_cast<int>(DType::Int64) == kernels::kDTypeInt64 &&
                  static_cast<int>(DType::UInt8) == kernels::kDTypeUInt8 &&
                  static_cast<int>(DType::Bool) == kernels::kDTypeBool,
              "kernels/elementwise.h's dtype codes follow core's DType");

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

// A gradient of the broadcast output reduced to one input's shape and dtype.
Tensor grad_for(const Tensor& grad, const Shape& sizes, DType dtype) {
  return sum_to(grad, sizes).to(dtype);
}

// out = op(a, b) over the broadcast shape, computing in `compute` and storing `compute` (or bool
// for a comparison); `alpha` is Add's scale of b.
Tensor binary_op(const char* op, const Tensor& a, const Tensor& b, DType compute, BinaryOp code,
                 double alpha = 1.0) {
  check_same_device(op, a, b);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), op);
  Tensor x = a.dtype() == compute ? a : a.detach().to(compute);
  Tensor y = b.dtype() == compute ? b : b.detach().to(compute);
  Tensor out = empty(shape, {.dtype = kernels::is_comparison(code) ? kBool : compute, .device = a.device()});
  Tensor xe = x.detach().expand(shape), ye = y.detach().expand(shape);
  kernels::StridedLoop<3> loop{shape, {out.strides(), xe.strides(), ye.strides()}};
  KernelContext on(out);
  const int dtype = static_cast<int>(compute);
  if (on.cpu()) kernels::cpu::binary(code, dtype, out.data_ptr(), xe.data_ptr(), ye.data_ptr(), loop, alpha, op);
  else kernels::cuda::binary(code, dtype, out.data_ptr(), xe.data_ptr(), ye.data_ptr(), loop, alpha, on.stream(), op);
  return out;
}

// out = op(a) computed and stored in `compute`; `scalar` is PowScalar's exponent.
Tensor unary_op(const char* op, const Tensor& a, DType compute, UnaryOp code, double scalar = 0.0) {
  EMBER_CHECK(a.defined(), op, ": called on an undefined tensor");
  Tensor x = a.dtype() == compute ? a.detach() : a.detach().to(compute);
  Tensor out = empty(a.sizes(), {.dtype = compute, .device = a.device()});
  kernels::StridedLoop<2> loop{a.sizes(), {out.strides(), x.strides()}};
  KernelContext on(out);
  const int dtype = static_cast<int>(compute);
  if (on.cpu()) kernels::cpu::unary(code, dtype, out.data_ptr(), x.data_ptr(), loop, scalar, op);
  else kernels::cuda::unary(code, dtype, out.data_ptr(), x.data_ptr(), loop, scalar, on.stream(), op);
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
  Tensor out = binary_op("add", a, b, t, BinaryOp::Add, alpha);
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
  Tensor out = binary_op("mul", a, b, t, BinaryOp::Mul);
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
  Tensor out = binary_op("div", a, b, t, BinaryOp::Div);
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
  Tensor out = unary_op("pow", a, t, UnaryOp::PowScalar, exponent);
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
  Tensor out = binary_op("pow", a, exponent, t, BinaryOp::Pow);
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
  Tensor out = binary_op(op, a, b, t, take_max ? BinaryOp::Maximum : BinaryOp::Minimum);
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
  Tensor out = unary_op("neg", a, a.dtype(), UnaryOp::Neg);
  if (autograd::needs_grad({a})) {
    autograd::record("neg", {a}, {&out}, [](const std::vector<Tensor>& g) { return std::vector<Tensor>{neg(g[0])}; });
  }
  return out;
}

Tensor exp(const Tensor& a) {
  Tensor out = unary_op("exp", a, floating_result(a.dtype()), UnaryOp::Exp);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("exp", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{mul(g[0], saved_out.unpack("exp"))};
    });
  }
  return out;
}

Tensor log(const Tensor& a) {
  Tensor out = unary_op("log", a, floating_result(a.dtype()), UnaryOp::Log);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    autograd::record("log", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{div(g[0], saved_a.unpack("log"))};
    });
  }
  return out;
}

Tensor sqrt(const Tensor& a) {
  Tensor out = unary_op("sqrt", a, floating_result(a.dtype()), UnaryOp::Sqrt);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("sqrt", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{div(g[0], mul(saved_out.unpack("sqrt"), 2.0))};
    });
  }
  return out;
}

Tensor abs(const Tensor& a) {
  Tensor out = unary_op("abs", a, a.dtype(), UnaryOp::Abs);
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

Tensor erf(const Tensor& a) {
  Tensor out = unary_op("erf", a, floating_result(a.dtype()), UnaryOp::Erf);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_a(a);
    autograd::record("erf", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      // d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2)
      Tensor x = saved_a.unpack("erf");
      return std::vector<Tensor>{mul(g[0], mul(exp(neg(mul(x, x))), 1.12837916709551257390))};
    });
  }
  return out;
}

Tensor tanh(const Tensor& a) {
  Tensor out = unary_op("tanh", a, floating_result(a.dtype()), UnaryOp::Tanh);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("tanh", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("tanh");  // d tanh / dx = 1 - y^2, from the output as PyTorch
      return std::vector<Tensor>{mul(g[0], sub(ones_like(y), mul(y, y)))};
    });
  }
  return out;
}

Tensor sigmoid(const Tensor& a) {
  Tensor out = unary_op("sigmoid", a, floating_result(a.dtype()), UnaryOp::Sigmoid);
  if (autograd::needs_grad({a})) {
    SavedTensor saved_out(out);
    autograd::record("sigmoid", {a}, {&out}, [=](const std::vector<Tensor>& g) {
      Tensor y = saved_out.unpack("sigmoid");  // d sigmoid / dx = y (1 - y)
      return std::vector<Tensor>{mul(g[0], mul(y, sub(ones_like(y), y)))};
    });
  }
  return out;
}

// --- Comparisons and where -----------------------------------------------------------------

#define EMBER_COMPARISON(name, code)                                           \
  Tensor name(const Tensor& a, const Tensor& b) {                              \
    check_same_device(#name, a, b);                                            \
    return binary_op(#name, a, b, promote_types(a.dtype(), b.dtype()), code); \
  }                                                                            \
  Tensor name(const Tensor& a, double b) { return name(a, scalar_like(b, a)); }
EMBER_COMPARISON(eq, BinaryOp::Eq)
EMBER_COMPARISON(ne, BinaryOp::Ne)
EMBER_COMPARISON(lt, BinaryOp::Lt)
EMBER_COMPARISON(le, BinaryOp::Le)
EMBER_COMPARISON(gt, BinaryOp::Gt)
EMBER_COMPARISON(ge, BinaryOp::Ge)
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
  kernels::StridedLoop<4> loop{shape, {out.strides(), c.strides(), x.strides(), y.strides()}};
  KernelContext on(out);
  const auto* pc = static_cast<const uint8_t*>(c.data_ptr());
  if (on.cpu()) kernels::cpu::where(static_cast<int>(t), out.data_ptr(), pc, x.data_ptr(), y.data_ptr(), loop);
  else kernels::cuda::where(static_cast<int>(t), out.data_ptr(), pc, x.data_ptr(), y.data_ptr(), loop, on.stream());
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

Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(a.defined() && mask.defined() && value.defined(), "masked_fill: called with an undefined tensor");
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill: expected a bool mask, got ", dtype_name(mask.dtype()));
  check_same_device("masked_fill", a, mask);
  EMBER_CHECK(value.dim() == 0, "masked_fill: expected a 0-dim value tensor, got ", value.dim(), "-D value of shape ",
              value.sizes());
  EMBER_CHECK(broadcast_shapes(a.sizes(), mask.sizes(), "masked_fill") == a.sizes(), "masked_fill: mask of shape ",
              mask.sizes(), " does not broadcast to the input's shape ", a.sizes());
  // A CPU scalar may fill a CUDA tensor, as in PyTorch; the value takes the input's dtype.
  return where(mask, value.to(a.device()).to(a.dtype()), a);
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, double value) {
  EMBER_CHECK(a.defined(), "masked_fill: called on an undefined tensor");
  return masked_fill(a, mask, full({}, value, {.dtype = a.dtype(), .device = a.device()}));
}

Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return ember::masked_fill(*this, mask, value); }

// --- In-place --------------------------------------------------------------------------------

Tensor& Tensor::fill_(double value) {
  EMBER_CHECK(defined(), "fill_: called on an undefined tensor");
  autograd::detail::check_inplace(*this, "fill_");
  if (is_contiguous()) {
    KernelContext on(*this);
    if (on.cpu()) kernels::cpu::fill(data_ptr(), static_cast<int>(dtype()), numel(), value);
    else kernels::cuda::fill(data_ptr(), static_cast<int>(dtype()), numel(), value, on.stream());
  } else {
    // One element, broadcast by copy_'s strided kernel (stride 0) into this view.
    NoGradGuard no_grad;
    copy_(full({}, value, {.dtype = dtype(), .device = device()}));
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
