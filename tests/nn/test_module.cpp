// nn::Module: registration, names, train/eval, moving, state dicts, summaries, PyTorch weights.
#include <catch2/catch.hpp>

#include <cmath>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/activation.h"
#include "ember/nn/conv.h"
#include "ember/nn/dropout.h"
#include "ember/nn/init.h"
#include "ember/nn/linear.h"
#include "ember/nn/pooling.h"
#include "ember/nn/sequential.h"
#include "examples/mnist/net.h"  // defines: ember::examples::Net

namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember::Tensor;
using ember::examples::Net;

namespace {

std::string fixture(const std::string& name) { return std::string(EMBER_FIXTURE_DIR) + "/" + name + ".safetensors"; }

}  // namespace

TEST_CASE("named_parameters lists every parameter recursively with dotted names") {
  Net net;
  std::vector<std::string> names;
  for (auto& [name, p] : net.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"});
  CHECK(net.parameters()[0].requires_grad());
  CHECK(net.children().size() == 3);
  net.eval();
  CHECK_FALSE(net.fc.is_training());
  net.train();
  CHECK(net.conv1.is_training());
}

TEST_CASE("default initialisation follows PyTorch: U(±1/sqrt(fan_in)) for weights and biases") {
  ember::manual_seed(0);
  nn::Linear fc(320, 10);
  double bound = 1.0 / std::sqrt(320.0);
  CHECK(ember::max(ember::abs(fc.weight)).item<float>() <= bound);
  CHECK(ember::max(ember::abs(fc.weight)).item<float>() > 0.9 * bound);
  CHECK(ember::max(ember::abs(fc.bias)).item<float>() <= bound);
  nn::Conv2d conv(10, 20, 5);
  CHECK(ember::max(ember::abs(conv.weight)).item<float>() <= 1.0 / std::sqrt(250.0));
}

TEST_CASE("to(dtype) keeps each parameter's identity, so an optimizer's handles see the move") {
  Net net;
  Tensor handle = net.fc.weight;
  ember::sum(net.forward(ember::randn({2, 1, 28, 28}))).backward();
  net.to(ember::kFloat64);
  CHECK(handle.dtype() == ember::kFloat64);
  CHECK(handle.is_same(net.parameters()[4]));
  CHECK(handle.grad().dtype() == ember::kFloat64);
  CHECK(net.forward(ember::randn({1, 1, 28, 28}, {.dtype = ember::kFloat64})).dtype() == ember::kFloat64);
  net.zero_grad();
  CHECK_FALSE(handle.grad().defined());
}

TEST_CASE("load_state_dict reports every bad key and leaves the module untouched") {
  Net net;
  auto state = net.state_dict();
  Tensor before = net.fc.bias.clone();
  state.erase("conv1.bias");
  state["fc.bias"] = ember::zeros({11});
  state["extra"] = ember::zeros({1});
  REQUIRE_THROWS_WITH(net.load_state_dict(state),
                      Catch::Contains("missing key \"conv1.bias\"") && Catch::Contains("\"fc.bias\" has shape [11] but the module expects [10]") &&
                      Catch::Contains("unexpected key \"extra\""));
  CHECK(ember::allclose(net.fc.bias, before, 0, 0));
}

TEST_CASE("PyTorch's own weights load into the ember model and give PyTorch's logits") {
  Net net;
  ember::load(net, fixture("module_tutorial_weights"));
  auto io = nn::read_safetensors(fixture("module_tutorial_io"));
  ember::NoGradGuard no_grad;
  Tensor logits = net.forward(io.at("x"));
  Tensor diff = ember::max(ember::abs(ember::sub(logits, io.at("logits"))));
  INFO("max |ember - PyTorch| = " << diff.item<float>());
  CHECK(diff.item<float>() < 1e-4 * ember::max(ember::abs(io.at("logits"))).item<float>());
}

TEST_CASE("save then load round-trips a model; the file is what PyTorch reads") {
  Net a, b;
  std::string path = "/tmp/ember_module_roundtrip.safetensors";
  ember::save(a, path);
  ember::load(b, path);
  for (auto& [name, t] : a.state_dict()) CHECK(ember::allclose(t, b.state_dict().at(name), 0, 0));
}

TEST_CASE("the summary lists each layer's output shape and parameter count, and the module prints like PyTorch") {
  Net net;
  std::string summary = net.summary({64, 1, 28, 28});
  CHECK_THAT(summary, Catch::Contains("conv1 (Conv2d)") && Catch::Contains("[64, 10, 24, 24]") && Catch::Contains("260"));
  CHECK_THAT(summary, Catch::Contains("fc (Linear)") && Catch::Contains("[64, 10]") && Catch::Contains("3210"));
  CHECK_THAT(summary, Catch::Contains("MaxPool2d") && Catch::Contains("total parameters") && Catch::Contains("8490"));
  CHECK_THAT(net.repr(), Catch::Contains("(conv1): Conv2d(1, 10, kernel_size=(5, 5), stride=(1, 1))"));
  CHECK_THAT(net.repr(), Catch::Contains("(fc): Linear(in_features=320, out_features=10, bias=True)"));
}

TEST_CASE("Sequential chains layers, indexes them and names them by position") {
  nn::Sequential seq;
  seq.push_back(nn::Flatten());
  seq.push_back(nn::Linear(12, 5));
  seq.push_back(nn::ReLU());
  seq.push_back(nn::Dropout(0.5));
  seq.eval();
  Tensor y = seq(ember::randn({2, 3, 4}));
  CHECK(y.sizes() == ember::Shape{2, 5});
  CHECK(seq.size() == 4);
  CHECK(seq[1].name() == "Linear");
  CHECK(seq.named_parameters()[0].first == "1.weight");
  REQUIRE_THROWS_WITH(seq[9], Catch::Contains("Sequential: index 9 is out of range for 4 layers"));
}

namespace {

// DESIGN.md's Net, as a user writes it: its forward takes a Tensor by value and overrides nothing.
struct DesignNet : nn::Module {
  nn::Conv2d conv1{1, 10, 5}, conv2{10, 20, 5};
  nn::MaxPool2d pool{2};
  nn::Linear fc{320, 10};
  DesignNet() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc", fc}}); }
  ember::Tensor forward(ember::Tensor x) {
    x = F::relu(pool(conv1(x)));
    x = F::relu(pool(conv2(x)));
    return fc(x.flatten(1));
  }
};

}  // namespace

TEST_CASE("DESIGN.md's Net (forward by value, no override) trains, summarises and names its gaps") {
  DesignNet net;
  net.to(ember::Device::cpu());
  CHECK(net.forward(ember::randn({2, 1, 28, 28})).sizes() == ember::Shape{2, 10});
  CHECK_THAT(nn::summary(net, {4, 1, 28, 28}), Catch::Contains("fc (Linear)") && Catch::Contains("[4, 10]") &&
                                                   Catch::Contains("8490"));
  // Through a Module& only the virtual forward(const Tensor&) is reachable.
  nn::Module& base = net;
  REQUIRE_THROWS_WITH(base.forward(ember::randn({1, 1, 28, 28})), Catch::Contains("forward not implemented for DesignNet"));
}

TEST_CASE("names are unique across a module's parameters, buffers and submodules") {
  nn::Linear fc(2, 3);
  REQUIRE_THROWS_WITH(fc.register_buffer("weight", ember::zeros({1})), Catch::Contains("\"weight\" is already registered in this Linear"));
  nn::Linear other(2, 2);
  REQUIRE_THROWS_WITH(fc.register_module("bias", other), Catch::Contains("\"bias\" is already registered"));
  REQUIRE_THROWS_WITH(fc.register_parameter("a.b", ember::zeros({1})), Catch::Contains("invalid name \"a.b\""));
  REQUIRE_THROWS_WITH(fc.register_parameter("labels", ember::arange(3)), Catch::Contains("must be floating point"));
  fc.register_buffer("running", ember::zeros({3}));
  CHECK(fc.state_dict().count("running") == 1);
  CHECK(fc.named_buffers()[0].first == "running");
}

TEST_CASE("init fills in place: zeros_, ones_, uniform_ bounds") {
  Tensor t = ember::empty({3, 4});
  nn::init::zeros_(t);
  CHECK(ember::allclose(t, ember::zeros({3, 4}), 0, 0));
  nn::init::ones_(t);
  CHECK(ember::allclose(t, ember::ones({3, 4}), 0, 0));
  nn::init::uniform_(t, 2.0, 3.0);
  CHECK(ember::min(t).item<float>() >= 2.0f);
  CHECK(ember::max(t).item<float>() <= 3.0f);
  CHECK(nn::init::fan_in(ember::empty({20, 10, 5, 5})) == 250);
  REQUIRE_THROWS_WITH(nn::init::fan_in(ember::empty({4})), Catch::Contains("at least 2 dims"));
}

TEST_CASE("ember::load of a file with a wrong shape changes nothing in the model") {
  Net a;
  nn::Linear small(10, 3);
  auto state = a.state_dict();
  state["fc.weight"] = small.weight.detach();
  nn::write_safetensors("/tmp/ember_module_bad_shape.safetensors", state);
  Net b;
  auto before = b.state_dict();
  std::map<std::string, Tensor> copies;
  for (auto& [name, t] : before) copies[name] = t.clone();
  REQUIRE_THROWS_WITH(ember::load(b, "/tmp/ember_module_bad_shape.safetensors"),
                      Catch::Contains("\"fc.weight\" has shape [3, 10] but the module expects [10, 320]"));
  for (auto& [name, t] : b.state_dict()) CHECK(ember::allclose(t, copies.at(name), 0, 0));
}

TEST_CASE("an ember checkpoint and its logits, for PyTorch to check (gen_module_fixtures.py --check-ember)") {
  ember::manual_seed(7);
  Net net;
  ember::save(net, "/tmp/ember_written.safetensors");
  Tensor x = ember::randn({4, 1, 28, 28});
  ember::NoGradGuard no_grad;
  nn::write_safetensors("/tmp/ember_written_io.safetensors", {{"x", x}, {"logits", net.forward(x)}});
  CHECK(nn::read_safetensors("/tmp/ember_written.safetensors").size() == 6);
}

TEST_CASE("Dropout is the identity in eval() and drops in train()") {
  nn::Dropout drop(0.5);
  Tensor x = ember::ones({1000});
  drop.eval();
  CHECK(ember::allclose(drop(x), x, 0, 0));
  drop.train();
  Tensor y = drop(x);
  double zeros = ember::sum(ember::eq(y, 0.0).to(ember::kFloat32)).item<float>();
  CHECK(zeros > 400);
  CHECK(zeros < 600);
}

TEST_CASE("moving a module that registered members by reference is refused; owned submodules move") {
  nn::Sequential seq;
  REQUIRE_THROWS_WITH(seq.push_back(Net()), Catch::Contains("cannot move a Net: its submodule \"conv1\" was registered by reference"));
  nn::Sequential inner;
  inner.push_back(nn::Linear(3, 4));
  inner.push_back(nn::ReLU());
  seq.push_back(std::move(inner));
  seq.push_back(std::make_shared<nn::Linear>(4, 2));
  CHECK(seq(ember::randn({5, 3})).sizes() == ember::Shape{5, 2});
  CHECK(seq.named_parameters()[0].first == "0.0.weight");
  CHECK_THAT(seq.repr(), Catch::Contains("(0): Sequential(\n    (0): Linear(in_features=3, out_features=4, bias=True)"));
}

namespace {

struct Renamed : nn::Module {
  std::string name() const override { return "Custom"; }
};

}  // namespace

TEST_CASE("a module prints under its own class name without overriding name(); an override still wins") {
  DesignNet design;
  CHECK(design.name() == "DesignNet");
  CHECK_THAT(design.repr(), Catch::StartsWith("DesignNet(\n  (conv1): Conv2d("));
  CHECK_THAT(Net().repr(), Catch::StartsWith("Net("));
  CHECK(nn::Conv2d(1, 2, 3).name() == "Conv2d");
  CHECK(nn::MaxPool2d(2).name() == "MaxPool2d");
  CHECK(nn::ReLU().name() == "ReLU");
  CHECK(nn::Flatten().name() == "Flatten");
  CHECK(nn::Sequential().name() == "Sequential");
  CHECK(Renamed().name() == "Custom");
  CHECK_THAT(Renamed().repr(), Catch::StartsWith("Custom("));
}

TEST_CASE("layers take designated-initializer options, with {h, w} pairs printed as PyTorch prints them") {
  nn::Conv2d conv(4, 4, {3, 1}, {.stride = {2, 1}, .padding = {1, 0}});
  CHECK(conv.weight.sizes() == ember::Shape{4, 4, 3, 1});
  CHECK(conv.repr() == "Conv2d(4, 4, kernel_size=(3, 1), stride=(2, 1), padding=(1, 0))");
  CHECK(conv(ember::randn({2, 4, 9, 7})).sizes() == ember::Shape{2, 4, 5, 7});
  nn::Conv2d dilated(2, 3, 3, {.dilation = {2, 1}, .bias = false});
  CHECK_FALSE(dilated.bias.defined());
  CHECK(dilated.repr() == "Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), dilation=(2, 1), bias=False)");

  nn::MaxPool2d pool(3, {.stride = 2, .padding = 1});
  CHECK(pool.repr() == "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)");
  CHECK(pool(ember::randn({1, 1, 7, 8})).sizes() == ember::Shape{1, 1, 4, 4});
  nn::MaxPool2d rect({3, 2}, {.stride = {2, 1}});
  CHECK(rect.repr() == "MaxPool2d(kernel_size=(3, 2), stride=(2, 1), padding=0, dilation=1, ceil_mode=False)");
  CHECK(rect(ember::randn({1, 1, 7, 8})).sizes() == ember::Shape{1, 1, 3, 7});
  CHECK(nn::MaxPool2d(2).repr() == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  // The repr strings below are PyTorch's (torch.nn.AvgPool2d(3, 2, 1) and so on).
  nn::MaxPool2d dilated_pool(3, {.dilation = 2, .ceil_mode = true});
  CHECK(dilated_pool.repr() == "MaxPool2d(kernel_size=3, stride=3, padding=0, dilation=2, ceil_mode=True)");
  CHECK(dilated_pool(ember::randn({1, 2, 9, 10})).sizes() == ember::Shape{1, 2, 3, 3});
  nn::AvgPool2d avg(3, {.stride = 2, .padding = 1, .count_include_pad = false});
  CHECK(avg.repr() == "AvgPool2d(kernel_size=3, stride=2, padding=1)");
  CHECK(avg(ember::randn({2, 3, 7, 8})).sizes() == ember::Shape{2, 3, 4, 4});
  CHECK(nn::AvgPool2d({3, 2}).repr() == "AvgPool2d(kernel_size=(3, 2), stride=(3, 2), padding=0)");
  nn::AdaptiveAvgPool2d gap(1);
  CHECK(gap.repr() == "AdaptiveAvgPool2d(output_size=1)");
  CHECK(gap(ember::randn({2, 3, 7, 7})).sizes() == ember::Shape{2, 3, 1, 1});
  nn::AdaptiveMaxPool2d amp({3, 4});
  CHECK(amp.repr() == "AdaptiveMaxPool2d(output_size=(3, 4))");
  CHECK(amp(ember::randn({3, 7, 9})).sizes() == ember::Shape{3, 3, 4});

  nn::Linear fc(784, 10, {.bias = false});
  CHECK_FALSE(fc.bias.defined());
  CHECK(fc.named_parameters().size() == 1);
  CHECK(fc.repr() == "Linear(in_features=784, out_features=10, bias=False)");
}

TEST_CASE("nn::Conv2d(4, 4, {3, 1}, {.stride = {2, 1}, .padding = {1, 0}}) computes PyTorch's Conv2d(4, 4, (3, 1), "
          "stride=(2, 1), padding=(1, 0))") {
  auto f = nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/functional_conv_3x1.safetensors");
  nn::Conv2d conv(4, 4, {3, 1}, {.stride = {2, 1}, .padding = {1, 0}});
  conv.load_state_dict({{"weight", f.at("w")}, {"bias", f.at("b")}});
  Tensor x = f.at("x").detach().clone().requires_grad_();
  Tensor y = conv(x);
  REQUIRE(y.sizes() == f.at("y").sizes());
  CHECK(ember::allclose(y, f.at("y"), 1e-4, 1e-5));
  y.backward(f.at("dy"));
  CHECK(ember::allclose(x.grad(), f.at("dx"), 1e-4, 1e-5));
  CHECK(ember::allclose(conv.weight.grad(), f.at("dw"), 1e-4, 1e-5));
  CHECK(ember::allclose(conv.bias.grad(), f.at("db"), 1e-4, 1e-5));
}

TEST_CASE("invalid layer options throw at construction with the functional op's message") {
  // The message each functional call gives, then the layer's, which must be the same text.
  auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const ember::Error& e) {
      return e.what();
    }
    return "no error";
  };
  Tensor x = ember::randn({1, 3, 8, 8}), w = ember::randn({8, 3, 3, 3});
  const std::string conv_stride = message([&] { F::conv2d(x, w, Tensor(), {.stride = 0}); });
  CHECK(conv_stride == "conv2d: stride must be positive, got 0");
  CHECK(message([] { nn::Conv2d(3, 8, 3, {.stride = 0}); }) == conv_stride);
  CHECK(message([] { nn::Conv2d(3, 8, 3, {.padding = {1, -1}}); }) ==
        message([&] { F::conv2d(x, w, Tensor(), {.padding = {1, -1}}); }));
  CHECK(message([] { nn::Conv2d(3, 8, 3, {.padding = {1, -1}}); }) == "conv2d: padding must be non-negative, got (1, -1)");
  CHECK(message([] { nn::Conv2d(3, 8, 3, {.dilation = {0, 2}}); }) ==
        message([&] { F::conv2d(x, w, Tensor(), {.dilation = {0, 2}}); }));
  CHECK(message([] { nn::Conv2d(3, 8, 3, {.groups = 2}); }) ==
        message([&] { F::conv2d(x, w, Tensor(), {.groups = 2}); }));
  CHECK(message([] { nn::Conv2d(3, 8, {3, 0}); }) ==
        "Conv2d: channels and kernel_size must be positive, got in_channels=3 out_channels=8 kernel_size=(3, 0)");

  CHECK(message([] { nn::MaxPool2d(2, {.stride = 0}); }) == "max_pool2d: stride must be positive, got 0");
  CHECK(message([] { nn::MaxPool2d(2, {.stride = 0}); }) == message([&] { F::max_pool2d(x, 2, {.stride = 0}); }));
  CHECK(message([] { nn::MaxPool2d({3, 2}, {.padding = {1, 2}}); }) ==
        "max_pool2d: pad should be at most half of effective kernel size, but got padding=(1, 2), kernel_size=(3, 2) "
        "and dilation=1");
  CHECK(message([] { nn::MaxPool2d({3, 2}, {.padding = {1, 2}}); }) ==
        message([&] { F::max_pool2d(x, {3, 2}, {.padding = {1, 2}}); }));
  CHECK(message([] { nn::MaxPool2d(0); }) == message([&] { F::max_pool2d(x, 0); }));
  CHECK(message([] { nn::MaxPool2d(2, {.dilation = 0}); }) == message([&] { F::max_pool2d(x, 2, {.dilation = 0}); }));
  CHECK(message([] { nn::MaxPool2d(2, {.dilation = 0}); }) == "max_pool2d: dilation must be positive, got 0");
  CHECK(message([] { nn::AvgPool2d(2, {.padding = 2}); }) == message([&] { F::avg_pool2d(x, 2, {.padding = 2}); }));
  CHECK(message([] { nn::AvgPool2d(2, {.padding = 2}); }) ==
        "avg_pool2d: pad should be at most half of kernel size, but got padding=2, kernel_size=2");
  CHECK(message([] { nn::AvgPool2d(2, {.divisor_override = 0}); }) == "avg_pool2d: divisor_override must not be zero");
  CHECK(message([] { nn::AdaptiveAvgPool2d({0, 3}); }) ==
        message([&] { F::adaptive_avg_pool2d(x, {0, 3}); }));
  CHECK(message([] { nn::AdaptiveMaxPool2d(0); }) == "adaptive_max_pool2d: output_size must be positive, got 0");
  CHECK_THAT(message([] { nn::Linear(0, 10, {.bias = false}); }), Catch::Contains("Linear: features must be positive"));
}
