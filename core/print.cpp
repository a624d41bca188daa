// Printing tensors the way PyTorch does: tensor([[1.0000, 2.0000]], device='cuda:0').
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

namespace ember {

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // PyTorch's default print threshold
constexpr int64_t kEdgeItems = 3;

struct Format {
  bool floating = false;
  bool integral_values = true;  // every float is a whole number: print "1." as PyTorch does
  bool scientific = false;
  bool boolean = false;
  int width = 1;
};

std::string format_value(double v, const Format& f) {
  char buf[64];
  if (f.boolean) return v != 0 ? "True" : "False";
  if (!f.floating) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else if (std::isnan(v)) std::snprintf(buf, sizeof buf, "nan");
  else if (std::isinf(v)) std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
  else if (f.scientific) std::snprintf(buf, sizeof buf, "%.4e", v);
  else if (f.integral_values) std::snprintf(buf, sizeof buf, "%.0f.", v);
  else std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

void print_dim(std::ostringstream& out, const Tensor& t, const Format& f, int64_t depth, bool summarize) {
  if (t.dim() == 0) {
    std::string s = format_value(t.item<double>(), f);
    out << std::string(f.width - static_cast<int>(s.size()), ' ') << s;
    return;
  }
  out << '[';
  int64_t n = t.size(0);
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << (t.dim() == 1 ? "..., " : "...,\n" + std::string(depth + 8, ' '));
      i = n - kEdgeItems;
    }
    print_dim(out, t.select(0, i), f, depth + 1, summarize);
    if (i + 1 < n) {
      out << ',';
      if (t.dim() == 1) out << ' ';
      else out << std::string(t.dim() - 1, '\n') << std::string(depth + 8, ' ');
    }
  }
  out << ']';
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  NoGradGuard no_grad;
  Tensor host = to(Device::cpu(), is_floating(dtype()) ? kFloat64 : (dtype() == kBool ? kBool : kInt64));
  Format f;
  f.floating = is_floating(dtype());
  f.boolean = dtype() == kBool;
  bool summarize = numel() > kSummarizeAbove;
  if (f.floating && numel() > 0) {
    Tensor flat = host.reshape({-1});
    double max_abs = 0, min_abs = INFINITY;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      double v = flat.data<double>()[i];
      if (!std::isfinite(v)) continue;
      if (v != std::floor(v)) f.integral_values = false;
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != 0) min_abs = std::min(min_abs, std::fabs(v));
    }
    f.scientific = max_abs >= 1e8 || (!f.integral_values && min_abs < 1e-4) ||
                   (min_abs != INFINITY && max_abs / min_abs > 1000 && !f.integral_values);
  }
  if (numel() > 0) {
    Tensor flat = host.reshape({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      double v = f.floating ? flat.data<double>()[i] : f.boolean ? flat.data<uint8_t>()[i] : static_cast<double>(flat.data<int64_t>()[i]);
      f.width = std::max(f.width, static_cast<int>(format_value(v, f).size()));
    }
  }
  std::ostringstream out;
  out << "tensor(";
  if (numel() == 0 && dim() > 0) out << "[]";
  else print_dim(out, host, f, 0, summarize);
  if (numel() == 0 && dim() > 1) out << ", size=" << shape_str(sizes());
  if (device().is_cuda()) out << ", device='" << device() << "'";
  bool default_dtype = dtype() == kFloat32 || dtype() == kInt64 || dtype() == kBool;
  if (!default_dtype) out << ", dtype=" << dtype_name(dtype());
  if (grad_fn()) out << ", grad_fn=<" << grad_fn()->name() << ">";
  else if (requires_grad()) out << ", requires_grad=True";
  out << ')';
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  EMBER_CHECK(a.sizes() == b.sizes(), "allclose: shapes ", a.sizes(), " and ", b.sizes(), " differ");
  NoGradGuard no_grad;
  Tensor x = a.to(Device::cpu(), kFloat64).contiguous(), y = b.to(Device::cpu(), kFloat64).contiguous();
  const double* px = x.data<double>();
  const double* py = y.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i]) || std::isnan(py[i])) return false;
    if (std::fabs(px[i] - py[i]) > atol + rtol * std::fabs(py[i])) return false;
  }
  return true;
}

}  // namespace ember
