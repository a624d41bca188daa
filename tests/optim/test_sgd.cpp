// SGD against torch.optim.SGD (tests/gen_module_fixtures.py), its state, and StepLR.
#include <catch2/catch.hpp>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/linear.h"
#include "ember/optim/sgd.h"
#include "ember/optim/lr_scheduler.h"

using ember::Tensor;
using ember::optim::SGD;
using ember::optim::SGDOptions;

namespace {

const SGDOptions kCases[] = {{.lr = 0.1}, {.lr = 0.05, .momentum = 0.9}, {.lr = 0.05, .momentum = 0.9, .dampening = 0.1},
                             {.lr = 0.02, .momentum = 0.5, .weight_decay = 0.01}, {.lr = 0.05, .momentum = 0.9, .nesterov = true}};

// loss = sum((p - target)^2 * (1 + step)), as in the fixture generator.
void backward_of_step(const Tensor& p, const Tensor& target, int step) {
  ember::sum(ember::mul(ember::pow(ember::sub(p, target), 2.0), 1.0 + step)).backward();
}

}  // namespace

TEST_CASE("five SGD steps match torch.optim.SGD for every option set") {
  for (int c = 0; c < 5; ++c) {
    auto f = ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/sgd_case" + std::to_string(c) + ".safetensors");
    Tensor p = f.at("p0").clone().requires_grad_();
    SGD opt({p}, kCases[c]);
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      backward_of_step(p, f.at("target"), step);
      opt.step();
      Tensor expected = f.at("step" + std::to_string(step));
      double err = ember::max(ember::abs(ember::sub(p.detach(), expected))).item<float>();
      INFO("case " << c << " step " << step << ": max |ember - PyTorch| = " << err);
      CHECK(err < 1e-5 * std::max(1.0f, ember::max(ember::abs(expected)).item<float>()));
    }
  }
}

TEST_CASE("momentum buffers live on the parameter's device and dtype, and follow it") {
  Tensor p = ember::ones({4}).requires_grad_();
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  ember::sum(p).backward();
  opt.step();
  CHECK(opt.momentum_buffer(0).device() == p.device());
  {
    // The parameter changes dtype in place (as Module::to does); the buffer follows at the next step.
    ember::NoGradGuard no_grad;
    Tensor moved = p.detach().to(ember::kFloat64);
    p.impl()->storage = moved.storage();
    p.impl()->dtype = ember::kFloat64;
    p.set_grad(ember::ones({4}, {.dtype = ember::kFloat64}));
  }
  opt.step();
  CHECK(opt.momentum_buffer(0).dtype() == ember::kFloat64);
}

TEST_CASE("an optimizer resumed from its state_dict continues exactly as the uninterrupted one") {
  auto run = [](bool interrupt) {
    Tensor p = ember::tensor({1.0f, -2.0f, 3.0f}).requires_grad_();
    auto opt = std::make_unique<SGD>(std::vector<Tensor>{p}, SGDOptions{.lr = 0.1, .momentum = 0.9});
    for (int step = 0; step < 6; ++step) {
      if (interrupt && step == 3) {
        auto state = opt->state_dict();
        ember::nn::write_safetensors("/tmp/ember_sgd_state.safetensors", state);
        opt = std::make_unique<SGD>(std::vector<Tensor>{p}, SGDOptions{.lr = 0.5, .momentum = 0.9});
        opt->load_state_dict(ember::nn::read_safetensors("/tmp/ember_sgd_state.safetensors"));
      }
      opt->zero_grad();
      ember::sum(ember::mul(p, p)).backward();
      opt->step();
    }
    return p.detach();
  };
  CHECK(ember::allclose(run(true), run(false), 0, 0));
}

TEST_CASE("SGD rejects invalid options, and StepLR decays the learning rate every step_size epochs") {
  Tensor p = ember::ones({1}).requires_grad_();
  REQUIRE_THROWS_WITH(SGD({p}, {.lr = -1}), Catch::Contains("SGD: learning rate must be >= 0, got -1"));
  REQUIRE_THROWS_WITH(SGD({p}, {.lr = 0.1, .nesterov = true}), Catch::Contains("nesterov momentum requires momentum > 0"));
  SGD opt({p}, {.lr = 1.0});
  ember::optim::StepLR schedule(opt, 2, 0.5);
  std::vector<double> seen;
  for (int epoch = 0; epoch < 5; ++epoch) {
    schedule.step();
    seen.push_back(schedule.get_last_lr()[0]);
  }
  CHECK(seen == std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25});
}

namespace {

struct TinyNet : ember::nn::Module {
  ember::nn::Linear fc1{4, 3}, fc2{3, 2};
  TinyNet() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(ember::nn::functional::relu(fc1(x))); }
};

}  // namespace

TEST_CASE("model.to() after the optimizer was built: the optimizer steps the moved parameters") {
  ember::manual_seed(3);
  TinyNet net;
  SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
  Tensor x = ember::randn({5, 4});
  auto train_step = [&](ember::DType dtype) {
    opt.zero_grad();
    ember::sum(net.forward(x.to(dtype))).backward();
    opt.step();
  };
  train_step(ember::kFloat32);
  CHECK(opt.momentum_buffer(0).dtype() == ember::kFloat32);
  Tensor before = net.fc1.weight.detach().clone();
  net.to(ember::kFloat64);  // the optimizer's handles are the same tensors, now float64
  CHECK(opt.parameters()[0].dtype() == ember::kFloat64);
  train_step(ember::kFloat64);
  CHECK(opt.momentum_buffer(0).dtype() == ember::kFloat64);
  CHECK(opt.momentum_buffer(0).device() == net.fc1.weight.device());
  CHECK_FALSE(ember::allclose(net.fc1.weight.to(ember::kFloat32), before, 0, 0));
  opt.to(ember::Device::cpu());
  CHECK(opt.momentum_buffer(0).device().is_cpu());
}

TEST_CASE("parameter groups keep their own options; parameters without a gradient are left alone") {
  Tensor a = ember::ones({2}).requires_grad_(), b = ember::ones({2}).requires_grad_(), c = ember::ones({2}).requires_grad_();
  SGD opt({ember::optim::SGDParamGroup{{a}, {.lr = 0.1}}});
  opt.add_param_group({{b, c}, {.lr = 1.0, .momentum = 0.5}});
  REQUIRE(opt.param_groups().size() == 2);
  ember::sum(ember::add(a, b)).backward();  // c gets no gradient
  opt.step();
  CHECK(ember::allclose(a.detach(), ember::full({2}, 0.9), 1e-6, 0));
  CHECK(ember::allclose(b.detach(), ember::zeros({2}), 1e-6, 1e-6));
  CHECK(ember::allclose(c.detach(), ember::ones({2}), 0, 0));
  CHECK_FALSE(opt.momentum_buffer(0).defined());  // no momentum in group 0
  CHECK(opt.momentum_buffer(1).defined());
  CHECK_FALSE(opt.momentum_buffer(2).defined());  // never stepped
  auto state = opt.state_dict();
  CHECK(state.count("state.1.momentum_buffer") == 1);
  CHECK(state.count("state.2.momentum_buffer") == 0);
  CHECK(state.at("group.1.lr").item<double>() == 1.0);
  REQUIRE_THROWS_WITH(opt.add_param_group({{ember::ones({1})}, {.lr = 0.1}}), Catch::Contains("requires grad"));
}

TEST_CASE("SGD::load_state_dict rejects bad state and then changes nothing") {
  Tensor p = ember::ones({3}).requires_grad_();
  SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
  ember::sum(p).backward();
  opt.step();
  Tensor buffer = opt.momentum_buffer(0).clone();
  auto bad = opt.state_dict();
  bad["group.0.lr"] = ember::tensor({0.7});
  bad["state.0.momentum_buffer"] = ember::zeros({3});
  bad["state.0.momentum_bufferx"] = ember::zeros({3});
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad), Catch::Contains("unexpected key \"state.0.momentum_bufferx\""));
  REQUIRE_THROWS_WITH(opt.load_state_dict({{"state.1.momentum_buffer", ember::zeros({3})}}), Catch::Contains("names parameter 1 but there are 1"));
  REQUIRE_THROWS_WITH(opt.load_state_dict({{"state.0.momentum_buffer", ember::zeros({4})}}), Catch::Contains("has shape [4] but parameter 0 is [3]"));
  CHECK(opt.learning_rates()[0] == 0.1);
  CHECK(ember::allclose(opt.momentum_buffer(0), buffer, 0, 0));
}

TEST_CASE("SGD rejects every invalid option as torch.optim.SGD does") {
  Tensor p = ember::ones({1}).requires_grad_();
  REQUIRE_THROWS_WITH(SGD({p}, {.lr = 0.1, .momentum = -0.1}), Catch::Contains("momentum must be >= 0"));
  REQUIRE_THROWS_WITH(SGD({p}, {.lr = 0.1, .weight_decay = -1}), Catch::Contains("weight_decay must be >= 0"));
  REQUIRE_THROWS_WITH(SGD({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}),
                      Catch::Contains("requires momentum > 0 and dampening 0"));
  Tensor nonleaf = ember::mul(p, 2.0);
  REQUIRE_THROWS_WITH(SGD({nonleaf}, {.lr = 0.1}), Catch::Contains("leaf tensor"));
}
