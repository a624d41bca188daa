// Module forward hooks and pre-hooks, named_modules / modules / apply.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/nn/activation.h"
#include "ember/nn/container.h"
#include "ember/nn/init.h"
#include "ember/nn/linear.h"
#include "ember/nn/sequential.h"

namespace nn = ember::nn;
using ember::Shape;
using ember::Tensor;

namespace {

// A user model that calls its layers through operator(), so their hooks run.
struct TwoLayer : nn::Module {
  nn::Linear fc1{4, 8}, fc2{8, 3};
  nn::ReLU relu;
  TwoLayer() { register_modules({{"fc1", fc1}, {"relu", relu}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
};

// A nested model; the expected names below are what PyTorch 1.13 prints for the same model:
//   class Nested(nn.Module):  # fc1 = Linear(4, 8); block = Sequential(Linear(8, 8), ReLU());
//     heads = ModuleDict({"cls": Linear(8, 3), "reg": Linear(8, 1)});
//     blocks = ModuleList([Linear(8, 8), Identity()])
struct Nested : nn::Module {
  nn::Linear fc1{4, 8};
  nn::Sequential block;
  nn::ModuleDict heads;
  nn::ModuleList blocks;
  Nested() {
    block.push_back(nn::Linear(8, 8));
    block.push_back(nn::ReLU());
    heads.insert("cls", nn::Linear(8, 3));
    heads.insert("reg", nn::Linear(8, 1));
    blocks.push_back(nn::Linear(8, 8));
    blocks.push_back(nn::Identity());
    register_modules({{"fc1", fc1}, {"block", block}, {"heads", heads}, {"blocks", blocks}});
  }
};

}  // namespace

TEST_CASE("forward hooks see each layer's input and output shapes inside a Sequential") {
  nn::Sequential seq;
  seq.push_back(nn::Linear(4, 6));
  seq.push_back(nn::ReLU());
  seq.push_back(nn::Linear(6, 2));
  std::vector<std::string> seen;
  std::vector<nn::RemovableHandle> handles;
  for (size_t i = 0; i < seq.size(); ++i) {
    handles.push_back(seq[i].register_forward_hook([&seen](nn::Module& m, const Tensor& in, const Tensor& out) {
      seen.push_back(m.name() + " " + ember::shape_str(in.sizes()) + " -> " + ember::shape_str(out.sizes()));
    }));
  }
  seq(ember::randn({5, 4}));
  CHECK(seen == std::vector<std::string>{"Linear [5, 4] -> [5, 6]", "ReLU [5, 6] -> [5, 6]", "Linear [5, 6] -> [5, 2]"});
  for (auto& h : handles) h.remove();
  seen.clear();
  seq(ember::randn({5, 4}));
  CHECK(seen.empty());
}

TEST_CASE("a forward hook that returns a tensor replaces the output, and gradients flow through it") {
  TwoLayer model;
  auto handle = model.fc2.register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& out) -> std::optional<Tensor> { return ember::mul(out, 2.0); });
  Tensor x = ember::randn({2, 4});
  Tensor doubled = model(x);
  Tensor plain = model.fc2.forward(model.relu.forward(model.fc1.forward(x)));  // forward() skips hooks
  CHECK(ember::allclose(doubled, ember::mul(plain, 2.0)));
  ember::sum(doubled).backward();
  Tensor grad_doubled = model.fc2.bias.grad().clone();
  CHECK(ember::allclose(grad_doubled, ember::full({3}, 4.0)));  // 2 rows, times 2
  handle.remove();
  CHECK(ember::allclose(model(x), plain));
}

TEST_CASE("a pre-hook that returns a tensor replaces the input; one returning nullopt keeps it") {
  nn::Identity id;
  std::vector<Shape> inputs_seen;
  id.register_forward_pre_hook([&](nn::Module&, const Tensor& in) { inputs_seen.push_back(in.sizes()); });
  auto h = id.register_forward_pre_hook(
      [](nn::Module&, const Tensor& in) -> std::optional<Tensor> { return in.reshape({-1}); });
  id.register_forward_pre_hook([&](nn::Module&, const Tensor& in) -> std::optional<Tensor> {
    inputs_seen.push_back(in.sizes());  // runs after the reshape: sees its result
    return std::nullopt;
  });
  CHECK(id(ember::zeros({2, 3})).sizes() == Shape{6});
  CHECK(inputs_seen == std::vector<Shape>{{2, 3}, {6}});
  h.remove();
  CHECK(id(ember::zeros({2, 3})).sizes() == Shape{2, 3});
}

TEST_CASE("hooks run in registration order, and the forward hook sees the replaced input") {
  nn::Linear fc(3, 2);
  std::vector<int> order;
  Shape hook_input;
  fc.register_forward_pre_hook([&](nn::Module&, const Tensor&) -> std::optional<Tensor> {
    order.push_back(1);
    return ember::ones({4, 3});
  });
  fc.register_forward_pre_hook([&](nn::Module&, const Tensor&) { order.push_back(2); });
  fc.register_forward_hook([&](nn::Module&, const Tensor& in, const Tensor&) {
    order.push_back(3);
    hook_input = in.sizes();
  });
  fc.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { order.push_back(4); });
  CHECK(fc(ember::zeros({1, 3})).sizes() == Shape{4, 2});
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(hook_input == Shape{4, 3});
}

TEST_CASE("RemovableHandle::remove is idempotent, removes only its own hook and outlives the module") {
  int calls_a = 0, calls_b = 0;
  nn::RemovableHandle a, b;
  {
    auto relu = std::make_unique<nn::ReLU>();
    a = relu->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls_a; });
    b = relu->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls_b; });
    a.remove();
    a.remove();
    (*relu)(ember::zeros({2}));
    CHECK(calls_a == 0);
    CHECK(calls_b == 1);
  }
  b.remove();  // the module is gone: nothing to do, no crash
  nn::RemovableHandle never;
  never.remove();
}

TEST_CASE("a hook may remove itself while it runs; the others still run this call") {
  nn::ReLU relu;
  int first = 0, second = 0;
  nn::RemovableHandle self;
  self = relu.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    ++first;
    self.remove();
  });
  relu.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++second; });
  relu(ember::zeros({1}));
  relu(ember::zeros({1}));
  CHECK(first == 1);
  CHECK(second == 2);
}

TEST_CASE("hooks move with a module handed to Sequential by value") {
  nn::ReLU relu;
  int calls = 0;
  auto handle = relu.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls; });
  nn::Sequential seq;
  seq.push_back(std::move(relu));
  seq(ember::zeros({3}));
  CHECK(calls == 1);
  handle.remove();  // still names the hook, now on the moved-to module
  seq(ember::zeros({3}));
  CHECK(calls == 1);
}

TEST_CASE("hooks on the layers of a user model run when it calls them through operator()") {
  TwoLayer model;
  std::vector<std::string> names;
  for (auto& [name, m] : model.named_modules()) {
    if (name.empty()) continue;
    m->register_forward_hook(
        [&names, name = name](nn::Module&, const Tensor&, const Tensor& out) {
          names.push_back(name + ember::shape_str(out.sizes()));
        });
  }
  model(ember::randn({2, 4}));
  CHECK(names == std::vector<std::string>{"fc1[2, 8]", "relu[2, 8]", "fc2[2, 3]"});
}

TEST_CASE("an empty hook is refused with a clear message") {
  nn::ReLU relu;
  CHECK_THROWS_WITH(relu.register_forward_hook(nn::ForwardHook()), Catch::Contains("register_forward_hook: the hook is empty"));
  CHECK_THROWS_WITH(relu.register_forward_pre_hook(nn::ForwardPreHook()),
                    Catch::Contains("register_forward_pre_hook: the hook is empty"));
}

TEST_CASE("named_modules lists self as \"\" then every submodule depth first, as PyTorch") {
  Nested model;
  std::vector<std::string> names;
  for (auto& [name, m] : model.named_modules()) names.push_back(name);
  // PyTorch 1.13: [k for k, _ in Net().named_modules()] for the same model in Python.
  CHECK(names == std::vector<std::string>{"", "fc1", "block", "block.0", "block.1", "heads", "heads.cls", "heads.reg",
                                          "blocks", "blocks.0", "blocks.1"});
  auto modules = model.modules();
  REQUIRE(modules.size() == names.size());
  CHECK(modules[0] == &model);
  CHECK(modules[1] == &model.fc1);
  CHECK(modules[8] == &model.blocks);
}

TEST_CASE("named_modules lists a module shared in two places once, under its first name") {
  auto shared = std::make_shared<nn::Linear>(2, 2);
  nn::Sequential seq;
  seq.push_back(shared);
  seq.push_back(shared);
  std::vector<std::string> names;
  for (auto& [name, m] : seq.named_modules()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"", "0"});
}

TEST_CASE("apply visits children before their parent and can re-initialise every Linear") {
  Nested model;
  std::vector<std::string> order;
  model.apply([&](nn::Module& m) { order.push_back(m.name()); });
  CHECK(order == std::vector<std::string>{"Linear", "Linear", "ReLU", "Sequential", "Linear", "Linear", "ModuleDict",
                                          "Linear", "Identity", "ModuleList", "Nested"});
  int linears = 0;
  model.apply([&](nn::Module& m) {
    if (auto* fc = dynamic_cast<nn::Linear*>(&m)) {
      ember::NoGradGuard no_grad;
      fc->weight.fill_(0.5);
      fc->bias.zero_();
      ++linears;
    }
  });
  CHECK(linears == 5);
  for (auto& [name, p] : model.named_parameters()) {
    INFO(name);
    CHECK(ember::allclose(p, name.ends_with("weight") ? ember::full(p.sizes(), 0.5) : ember::zeros(p.sizes())));
  }
}
