// The blocks of docs/models.md (examples/models/blocks.h) against the same blocks in PyTorch
// (tests/gen_block_fixtures.py): weights and BatchNorm statistics loaded from PyTorch's state_dict,
// the training-mode output and every gradient, the running statistics after that step, and the
// eval-mode output.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>
#include <string>

#include "examples/models/blocks.h"
#include "nn/reference.h"

using ember::Tensor;
using namespace ember::test;

namespace {

// Entries "<prefix>.<key>" of a fixture, by key.
std::map<std::string, Tensor> with_prefix(const std::map<std::string, Tensor>& f, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : f) {
    if (key.rfind(prefix + ".", 0) == 0) out[key.substr(prefix.size() + 1)] = value;
  }
  return out;
}

void check_block(ember::nn::Module& block, const std::string& name) {
  auto f = fixture("block_" + name);
  block.load_state_dict(with_prefix(f, "state"));
  block.train();
  Tensor x = f.at("x").clone().requires_grad_();
  Tensor y = block(x);
  require_close(y, f.at("y_train"), name + " training output");
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + " input gradient");
  auto grads = with_prefix(f, "grad");
  for (const auto& [key, p] : block.named_parameters()) {
    INFO(key);
    REQUIRE(grads.count(key) == 1);
    require_close(p.grad(), grads.at(key), name + " gradient of " + key);
  }
  REQUIRE(grads.size() == block.named_parameters().size());
  auto after = with_prefix(f, "after");
  auto buffers = block.named_buffers();
  REQUIRE(after.size() == buffers.size());
  for (const auto& [key, b] : buffers) {
    REQUIRE(after.count(key) == 1);
    require_close(b, after.at(key), name + " buffer " + key + " after one training step", 1e-5);
  }
  block.eval();
  require_close(block(f.at("x")), f.at("y_eval"), name + " eval output");
}

}  // namespace

TEST_CASE("the ResNet basic block of docs/models.md gives PyTorch's outputs, gradients and statistics") {
  ember::models::BasicBlock same(8, 8);
  check_block(same, "basic_same");
  ember::models::BasicBlock down(8, 16, 2);
  check_block(down, "basic_down");
}

TEST_CASE("the MobileNet-style block of docs/models.md gives PyTorch's outputs, gradients and statistics") {
  ember::models::InvertedResidual same(8, 8);
  check_block(same, "inverted_residual");
  ember::models::InvertedResidual down(8, 12, 2);
  check_block(down, "inverted_residual_down");
}

TEST_CASE("ResNet-8 built from basic blocks has issue 18's 77,754 parameters and classifies a batch") {
  auto net = ember::models::resnet8();
  int64_t count = 0;
  for (const Tensor& p : net->parameters()) count += p.numel();
  CHECK(count == 77754);
  CHECK(net->named_buffers().size() == 3 * 9);  // 9 BatchNorms: running mean, variance, batch count
  CHECK(net->state_dict().count("4.shortcut.1.running_var") == 1);
  Tensor logits = (*net)(ember::randn({2, 1, 28, 28}));
  CHECK(logits.sizes() == ember::Shape{2, 10});
}

TEST_CASE("print_activations reports every module through forward hooks and removes them") {
  auto net = ember::models::resnet8();
  net->eval();
  std::ostringstream out;
  ember::models::print_activations(*net, ember::randn({2, 1, 28, 28}), out);
  const std::string text = out.str();
  CHECK(text.find("0 Conv2d: [2, 16, 28, 28]") != std::string::npos);
  CHECK(text.find("4.conv1 Conv2d: [2, 32, 14, 14]") != std::string::npos);
  CHECK(text.find("4.shortcut Sequential: [2, 32, 14, 14]") != std::string::npos);
  CHECK(text.find("6 AdaptiveAvgPool2d: [2, 64, 1, 1]") != std::string::npos);
  CHECK(text.find("(model) Sequential: [2, 10]") != std::string::npos);
  (*net)(ember::randn({2, 1, 28, 28}));  // the hooks are gone: nothing more is written
  CHECK(out.str() == text);
}
