// The autograd engine: accumulation, views, broadcasting, retain_graph, hooks, in-place checks.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"

using ember::Tensor;

namespace {
// Autograd's gradient of sum(fn(x) * w) against central differences, float64.
void check_gradient(const char* what, const std::function<Tensor(const Tensor&)>& fn, Tensor x) {
  x = x.to(ember::kFloat64).detach().requires_grad_();
  Tensor out = fn(x);
  Tensor w = ember::randn(out.sizes(), {.dtype = ember::kFloat64});
  ember::sum(ember::mul(out, w)).backward();
  ember::NoGradGuard no_grad;
  Tensor flat = x.detach().contiguous().reshape({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    auto at = [&](double d) {
      Tensor moved = flat.clone();
      moved.data<double>()[i] += d;
      return ember::sum(ember::mul(fn(moved.reshape(x.sizes())), w)).item<double>();
    };
    double numeric = (at(1e-6) - at(-1e-6)) / 2e-6;
    double analytic = x.grad().contiguous().reshape({-1}).data<double>()[i];
    INFO(what << " element " << i << ": numeric " << numeric << " autograd " << analytic);
    REQUIRE(std::fabs(numeric - analytic) < 1e-5 * std::max(1.0, std::fabs(numeric)));
  }
}
}  // namespace

TEST_CASE("gradients of every tensor op match finite differences, with broadcasting and strided inputs") {
  ember::manual_seed(2);
  Tensor other = ember::randn({3, 1}, {.dtype = ember::kFloat64});
  Tensor positive = ember::add(ember::rand({2, 3}), 0.5);
  check_gradient("add", [&](const Tensor& x) { return ember::add(x, other, 2.0); }, ember::randn({2, 3, 4}));
  check_gradient("sub", [&](const Tensor& x) { return ember::sub(other, x); }, ember::randn({3, 4}));
  check_gradient("mul", [&](const Tensor& x) { return ember::mul(x, x.t().t()); }, ember::randn({3, 4}));
  check_gradient("div", [&](const Tensor& x) { return ember::div(other, ember::add(ember::mul(x, x), 1.0)); }, ember::randn({4}));
  check_gradient("pow", [](const Tensor& x) { return ember::pow(x, 3.0); }, ember::randn({5}));
  check_gradient("pow tensor", [&](const Tensor& x) { return ember::pow(x, x); }, positive);
  check_gradient("exp log sqrt", [](const Tensor& x) { return ember::sqrt(ember::exp(ember::log(x))); }, positive);
  check_gradient("abs neg", [](const Tensor& x) { return ember::neg(ember::abs(x)); }, ember::add(ember::randn({6}), 0.0));
  check_gradient("where", [](const Tensor& x) { return ember::where(ember::gt(x, 0.0), x, ember::mul(x, 3.0)); }, ember::randn({6}));
  check_gradient("maximum", [&](const Tensor& x) { return ember::maximum(x, other.t()); }, ember::randn({2, 3}));
  check_gradient("sum over dims", [](const Tensor& x) { return ember::sum(x, {0, 2}, true); }, ember::randn({2, 3, 4}));
  check_gradient("mean", [](const Tensor& x) { return ember::mean(x, {1}); }, ember::randn({3, 4}));
  check_gradient("max over dim", [](const Tensor& x) { return std::get<0>(ember::max(x, 1)); }, ember::randn({3, 4}));
  check_gradient("min all", [](const Tensor& x) { return ember::min(x); }, ember::randn({3, 4}));
  check_gradient("matmul transposed", [&](const Tensor& x) { return ember::matmul(x.t(), x); }, ember::randn({3, 4}));
  check_gradient("batched matmul", [&](const Tensor& x) { return ember::matmul(x, x.transpose(1, 2)); }, ember::randn({2, 3, 4}));
  check_gradient("views", [](const Tensor& x) {
    return x.transpose(0, 1).narrow(0, 1, 2).select(1, 0).unsqueeze(1).expand({2, 3}).reshape({6}).permute({0});
  }, ember::randn({2, 3}));
  check_gradient("contiguous of a permute", [](const Tensor& x) { return x.permute({2, 0, 1}).contiguous().view({-1}); },
                 ember::randn({2, 3, 2}));
}

TEST_CASE("gradients accumulate over repeated uses and over backward calls") {
  Tensor x = ember::tensor({1.0, 2.0}).requires_grad_();
  ember::sum(ember::add(ember::mul(x, x), x)).backward();
  CHECK(x.grad().at<double>({1}) == 5);
  ember::sum(x).backward();
  CHECK(x.grad().at<double>({1}) == 6);
  Tensor y = ember::mul(x, 2.0);
  y.backward(ember::tensor({1.0, 10.0}));
  CHECK(x.grad().at<double>({1}) == 26);
}

TEST_CASE("a leaf's first gradient is adopted only when nothing else shares its memory") {
  // Adopted: a fresh gradient no one else holds (mul's), with the same values as a copy.
  Tensor x = ember::tensor({-1.0, 2.0, 3.0}).requires_grad_();
  ember::mul(x, 2.0).backward(ember::tensor({5.0, 6.0, 7.0}));
  CHECK(x.grad().at<double>({0}) == 10);
  CHECK(x.grad().at<double>({2}) == 14);

  // The caller's gradient, passed straight to a leaf or through a view of it, stays the caller's:
  // the next backward adds into .grad in place and must leave dy alone.
  Tensor leaf = ember::tensor({1.0, 2.0}).requires_grad_();
  Tensor dy = ember::tensor({3.0, 4.0});
  leaf.backward(dy);
  leaf.backward(dy);
  CHECK(leaf.grad().at<double>({1}) == 8);
  CHECK(dy.at<double>({1}) == 4);
  CHECK(leaf.grad().data_ptr() != dy.data_ptr());
  Tensor square = ember::tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor dflat = ember::tensor({1.0, 1.0, 1.0, 1.0});
  square.reshape({2, 2}).backward(dflat.reshape({2, 2}));
  square.reshape({2, 2}).backward(dflat.reshape({2, 2}));
  CHECK(dflat.at<double>({3}) == 1);
  CHECK(square.grad().at<double>({3}) == 2);

  // add hands the same gradient to both inputs: one leaf may adopt it, the other must copy it.
  Tensor a = ember::tensor({1.0, 2.0}).requires_grad_(), b = ember::tensor({3.0, 4.0}).requires_grad_();
  ember::mul(ember::add(a, b), 1.0).backward(ember::tensor({1.0, 1.0}));
  CHECK(a.grad().data_ptr() != b.grad().data_ptr());
  a.grad().add_(ember::tensor({10.0, 10.0}));
  CHECK(b.grad().at<double>({0}) == 1);
}

TEST_CASE("retain_graph keeps the graph for a second backward; without it the second one throws") {
  Tensor x = ember::tensor({3.0}).requires_grad_();
  Tensor y = ember::mul(x, x);
  y.backward(Tensor(), true);
  y.backward();
  CHECK(x.grad().item<double>() == 12);
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("a second time"));
}

TEST_CASE("NoGradGuard, detach and requires_grad_ control what is recorded") {
  Tensor x = ember::ones({2}).requires_grad_();
  {
    ember::NoGradGuard no_grad;
    CHECK_FALSE(ember::mul(x, 2.0).requires_grad());
  }
  CHECK(ember::mul(x, 2.0).requires_grad());
  CHECK_FALSE(x.detach().requires_grad());
  REQUIRE_THROWS_WITH(ember::arange(3).requires_grad_(), Catch::Contains("only floating-point tensors can require grad"));
  REQUIRE_THROWS_WITH(ember::ones({2}).sum().backward(), Catch::Contains("does not require grad"));
  REQUIRE_THROWS_WITH(ember::mul(x, 2.0).backward(), Catch::Contains("can be implied only for a one-element tensor"));
  REQUIRE_THROWS_WITH(x.fill_(1), Catch::Contains("fill_: a leaf tensor that requires grad cannot be changed in place"));
}

TEST_CASE("grad-ready hooks run once per backward, with the final gradient") {
  Tensor x = ember::ones({3}).requires_grad_();
  int calls = 0;
  float seen = 0;
  x.register_grad_ready_hook([&](const Tensor& leaf) {
    ++calls;
    seen = leaf.grad().sum().item<float>();
  });
  ember::sum(ember::add(ember::mul(x, 2.0), x)).backward();  // two paths into x
  CHECK(calls == 1);
  CHECK(seen == 9);
}

TEST_CASE("a removed grad-ready hook no longer runs; the others still do, in order") {
  Tensor x = ember::ones({2}).requires_grad_();
  std::vector<int> calls;
  const int64_t first = x.register_grad_ready_hook([&](const Tensor&) { calls.push_back(1); });
  x.register_grad_ready_hook([&](const Tensor&) { calls.push_back(2); });
  x.register_grad_ready_hook([&](const Tensor&) { calls.push_back(3); });
  ember::sum(x).backward();
  CHECK(calls == std::vector<int>{1, 2, 3});
  x.remove_grad_ready_hook(first);
  x.remove_grad_ready_hook(first);  // twice: nothing
  x.remove_grad_ready_hook(12345);  // unknown: nothing
  calls.clear();
  ember::sum(x).backward();
  CHECK(calls == std::vector<int>{2, 3});
}

TEST_CASE("changing in place a tensor saved for backward raises at backward time") {
  Tensor x = ember::ones({2}).requires_grad_();
  Tensor w = ember::full({2}, 3.0);
  Tensor y = ember::mul(x, w);
  w.fill_(5);
  REQUIRE_THROWS_WITH(ember::sum(y).backward(), Catch::Contains("was modified in place afterwards (version 1, now 2)"));
}

TEST_CASE("10,000 forward/backward steps do not grow memory") {
  auto resident_kb = [] {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * 4;
  };
  Tensor w = ember::randn({16, 16}).requires_grad_();
  Tensor x = ember::randn({8, 16});
  auto step = [&] {
    ember::sum(ember::mul(ember::matmul(x, w), 2.0)).backward();
    w.set_grad(Tensor());
  };
  for (int i = 0; i < 200; ++i) step();
  long before = resident_kb();
  for (int i = 0; i < 10000; ++i) step();
#if defined(__SANITIZE_ADDRESS__)
  (void)before;  // ASan's quarantine holds freed memory; LeakSanitizer checks for leaks instead
#else
  CHECK(resident_kb() - before < 2048);
#endif
  // The graph itself is gone once its output is: no node outlives its step.
  std::weak_ptr<ember::Node> node;
  {
    Tensor loss = ember::sum(ember::mul(ember::matmul(x, w), 2.0));
    node = loss.grad_fn();
    loss.backward();
  }
  CHECK(node.expired());
}
