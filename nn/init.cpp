#include "ember/nn/init.h"

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"

namespace ember::nn::init {

int64_t fan_in(const Tensor& weight) {
  EMBER_CHECK(weight.dim() >= 2, "fan_in: expected a weight with at least 2 dims, got ", weight.sizes());
  int64_t fan = weight.size(1);
  for (int64_t d = 2; d < weight.dim(); ++d) fan *= weight.size(d);
  return fan;
}

void uniform_(Tensor& t, double low, double high) {
  EMBER_CHECK(low <= high, "uniform_: low must be <= high, got [", low, ", ", high, "]");
  NoGradGuard no_grad;
  Tensor u = rand(t.sizes(), {.dtype = t.dtype(), .device = t.device()});
  t.detach().copy_(add(mul(u, high - low), low));
}

void kaiming_uniform_(Tensor& t, double a) {
  double bound = std::sqrt(6.0 / ((1.0 + a * a) * static_cast<double>(fan_in(t))));
  uniform_(t, -bound, bound);
}

void zeros_(Tensor& t) {
  NoGradGuard no_grad;
  t.detach().fill_(0.0);
}

void ones_(Tensor& t) {
  NoGradGuard no_grad;
  t.detach().fill_(1.0);
}

}  // namespace ember::nn::init
