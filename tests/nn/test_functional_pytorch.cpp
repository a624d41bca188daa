// The functional ops against PyTorch's own values (tests/gen_functional_fixtures.py).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

namespace {

// The options tensor of a conv fixture: [stride h, w, padding h, w, dilation h, w, bias].
F::Conv2dOptions conv_options(const Tensor& o) {
  auto at = [&](int64_t i) { return o.at<int64_t>({i}); };
  return {.stride = {at(0), at(1)}, .padding = {at(2), at(3)}, .dilation = {at(4), at(5)}};
}

void check_conv_fixture(const std::string& name) {
  auto f = fixture("functional_" + name);
  Tensor options = f.at("options");
  bool has_bias = options.at<int64_t>({6}) != 0;
  Tensor x = leaf(f.at("x")), w = leaf(f.at("w"));
  Tensor b = has_bias ? leaf(f.at("b")) : Tensor();
  Tensor y = F::conv2d(x, w, b, conv_options(options));
  require_close(y, f.at("y"), name + " forward");
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + " input gradient");
  require_close(w.grad(), f.at("dw"), name + " weight gradient");
  if (has_bias) require_close(b.grad(), f.at("db"), name + " bias gradient");
}

// The options tensor of a pool fixture: [kernel h, w, stride h, w, padding h, w].
void check_pool_fixture(const std::string& name) {
  auto f = fixture("functional_" + name);
  Tensor o = f.at("options");
  auto at = [&](int64_t i) { return o.at<int64_t>({i}); };
  Tensor x = leaf(f.at("x"));
  Tensor y = F::max_pool2d(x, {at(0), at(1)}, {.stride = {at(2), at(3)}, .padding = {at(4), at(5)}});
  require_close(y, f.at("y"), name + " forward");
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + " input gradient");
}

}  // namespace

TEST_CASE("conv2d matches PyTorch's output and gradients at the tutorial shapes and odd configurations") {
  for (std::string name : {"conv1", "conv2", "conv_odd", "conv_batch1_nobias", "conv_stride3"}) {
    check_conv_fixture(name);
  }
}

TEST_CASE("conv2d matches PyTorch with non-square kernels, strides, paddings and dilations") {
  for (std::string name : {"conv_3x1", "conv_rect_dilated", "conv_rect_nobias"}) check_conv_fixture(name);
}

TEST_CASE("max_pool2d matches PyTorch's output and routes gradients like PyTorch") {
  for (std::string name : {"pool1", "pool2", "pool_odd"}) check_pool_fixture(name);
}

TEST_CASE("max_pool2d matches PyTorch with non-square kernels, strides and paddings") {
  for (std::string name : {"pool_rect", "pool_rect_wide"}) check_pool_fixture(name);
}

TEST_CASE("relu, log_softmax and linear match PyTorch") {
  {
    auto f = fixture("functional_relu");
    Tensor x = leaf(f.at("x"));
    Tensor y = F::relu(x);
    require_close(y, f.at("y"), "relu forward");
    y.backward(f.at("dy"));
    require_close(x.grad(), f.at("dx"), "relu gradient");
  }
  {
    auto f = fixture("functional_log_softmax");
    Tensor x = leaf(f.at("x"));
    Tensor y = F::log_softmax(x, 1);
    require_close(y, f.at("y"), "log_softmax forward");
    y.backward(f.at("dy"));
    require_close(x.grad(), f.at("dx"), "log_softmax gradient");
  }
  for (std::string name : {"fc", "fc_odd"}) {
    auto f = fixture("functional_" + name);
    Tensor x = leaf(f.at("x")), w = leaf(f.at("w")), b = leaf(f.at("b"));
    Tensor y = F::linear(x, w, b);
    require_close(y, f.at("y"), name + " forward");
    y.backward(f.at("dy"));
    require_close(x.grad(), f.at("dx"), name + " input gradient");
    require_close(w.grad(), f.at("dw"), name + " weight gradient");
    require_close(b.grad(), f.at("db"), name + " bias gradient");
  }
}

TEST_CASE("cross_entropy matches PyTorch's loss, per-row losses and logit gradient") {
  auto f = fixture("functional_cross_entropy");
  Tensor logits = leaf(f.at("logits"));
  Tensor loss = F::cross_entropy(logits, f.at("target"));
  require_close(loss.reshape({1}), f.at("loss"), "cross_entropy mean loss");
  loss.backward();
  require_close(logits.grad(), f.at("dlogits"), "cross_entropy gradient");
  ember::NoGradGuard no_grad;
  require_close(F::cross_entropy(logits, f.at("target"), F::Reduction::None), f.at("losses"),
                "cross_entropy per-row losses");
  Tensor via_nll = F::nll_loss(F::log_softmax(logits, 1), f.at("target"), F::Reduction::Sum);
  require_close(via_nll.reshape({1}), ember::mul(f.at("loss"), 64.0), "nll_loss(log_softmax) sum");
}

TEST_CASE("the tutorial network's loss and every parameter gradient match PyTorch") {
  auto f = fixture("functional_tutorial_network");
  std::map<std::string, Tensor> p;
  for (std::string name : {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"}) {
    p[name] = leaf(f.at(name));
  }
  Tensor x = F::relu(F::max_pool2d(F::conv2d(f.at("x"), p["conv1.weight"], p["conv1.bias"]), 2));
  x = F::relu(F::max_pool2d(F::conv2d(x, p["conv2.weight"], p["conv2.bias"]), 2));
  Tensor loss = F::cross_entropy(F::linear(x.flatten(1), p["fc.weight"], p["fc.bias"]), f.at("target"));
  require_close(loss.reshape({1}), f.at("loss"), "network loss");
  loss.backward();
  for (auto& [name, param] : p) require_close(param.grad(), f.at("grad." + name), "gradient of " + name);
}
