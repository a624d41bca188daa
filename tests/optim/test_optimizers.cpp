// Adam, AdamW, RMSprop and Adagrad against torch.optim (tests/gen_optim_fixtures.py): 5 steps
// over two parameter groups for several option sets, in float64 and float32; then what they
// share with SGD through ParamGroupOptimizer: state_dict, resume, dtype following, bad state.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"

using ember::Tensor;
namespace optim = ember::optim;

namespace {

std::map<std::string, Tensor> fixture(const std::string& name) {
  return ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/" + name + ".safetensors");
}

// The generator's loss: quadratic in p0 (steeper each step), cubic plus quadratic in p1.
Tensor loss_of(const Tensor& p0, const Tensor& p1, const Tensor& t0, const Tensor& t1, int step) {
  Tensor a = ember::sum(ember::mul(ember::pow(ember::sub(p0, t0), 2.0), 1.0 + step));
  Tensor b = ember::mul(ember::sum(ember::pow(p1, 3.0)), 0.1);
  return ember::add(ember::add(a, b), ember::sum(ember::pow(ember::sub(p1, t1), 2.0)));
}

// max |got − want| / max(1, max |want|).
double relative_error(const Tensor& got, const Tensor& want) {
  const Tensor g = got.detach().to(ember::Device::cpu(), ember::kFloat64), w = want.to(ember::Device::cpu(), ember::kFloat64);
  const double scale = std::max(1.0, ember::max(ember::abs(w)).item<double>());
  return ember::max(ember::abs(ember::sub(g, w))).item<double>() / scale;
}

// Replays one fixture: group 0 = {p0} with `options`, group 1 = {p1} at half the rate.
template <class Opt, class Options>
void replay(const std::string& name, Options options) {
  for (const std::string suffix : {"", "_f32"}) {
    auto f = fixture(name + suffix);
    const double tol = suffix.empty() ? 1e-12 : 2e-6;
    Tensor p0 = f.at("p0").clone().requires_grad_(), p1 = f.at("p1").clone().requires_grad_();
    Options half = options;
    half.lr /= 2;
    Opt opt({optim::ParamGroup<Options>{{p0}, options}, optim::ParamGroup<Options>{{p1}, half}});
    for (int step = 0; step < 5; ++step) {
      opt.zero_grad();
      loss_of(p0, p1, f.at("target0"), f.at("target1"), step).backward();
      opt.step();
      for (const auto& [which, p] : {std::pair{"p0", p0}, std::pair{"p1", p1}}) {
        const double err = relative_error(p, f.at("step" + std::to_string(step) + "." + which));
        INFO(name << suffix << " step " << step << " " << which << ": relative |ember - PyTorch| = " << err);
        CHECK(err <= tol);
      }
    }
    for (const auto& [key, want] : f) {
      if (key.rfind("state.0.", 0) != 0) continue;
      const double err = relative_error(opt.state(0, key.substr(8)), want);
      INFO(name << suffix << " " << key << ": relative |ember - PyTorch| = " << err);
      CHECK(err <= tol);
    }
    CHECK(opt.step_count(0) == 5);
  }
}

}  // namespace

TEST_CASE("Adam and AdamW follow torch.optim for five steps, every option set, two groups, float64 and float32") {
  replay<optim::Adam>("optim_adam0", optim::AdamOptions{.lr = 0.1});
  replay<optim::Adam>("optim_adam1", optim::AdamOptions{.lr = 0.05, .betas = {0.8, 0.99}, .eps = 1e-6,
                                                        .weight_decay = 0.1});
  replay<optim::Adam>("optim_adam2", optim::AdamOptions{.lr = 0.1, .amsgrad = true});
  replay<optim::Adam>("optim_adam3", optim::AdamOptions{.lr = 0.1, .maximize = true});
  replay<optim::AdamW>("optim_adamw0", optim::AdamWOptions{.lr = 0.1});
  replay<optim::AdamW>("optim_adamw1", optim::AdamWOptions{.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
}

TEST_CASE("RMSprop follows torch.optim for five steps: plain, momentum, centered, both") {
  replay<optim::RMSprop>("optim_rmsprop0", optim::RMSpropOptions{.lr = 0.01});
  replay<optim::RMSprop>("optim_rmsprop1", optim::RMSpropOptions{.lr = 0.01, .momentum = 0.9});
  replay<optim::RMSprop>("optim_rmsprop2", optim::RMSpropOptions{.lr = 0.01, .weight_decay = 0.1, .centered = true});
  replay<optim::RMSprop>("optim_rmsprop3", optim::RMSpropOptions{.lr = 0.01, .alpha = 0.9, .momentum = 0.5,
                                                                 .centered = true});
}

TEST_CASE("Adagrad follows torch.optim for five steps, with lr_decay, weight decay and an initial accumulator") {
  replay<optim::Adagrad>("optim_adagrad0", optim::AdagradOptions{.lr = 0.1});
  replay<optim::Adagrad>("optim_adagrad1", optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.1,
                                                                 .initial_accumulator_value = 0.5});
}

namespace {

// Three steps, a state_dict through a safetensors file into a fresh optimizer, two more steps:
// the same bits as five uninterrupted steps.
template <class Opt, class Options>
void check_resume(Options options) {
  auto run = [&](bool interrupt) {
    ember::manual_seed(3);
    Tensor p = ember::randn({4, 6}).requires_grad_(), t = ember::randn({4, 6});
    auto opt = std::make_unique<Opt>(std::vector<Tensor>{p}, options);
    for (int step = 0; step < 5; ++step) {
      if (interrupt && step == 3) {
        ember::nn::write_safetensors("/tmp/ember_optim_resume.safetensors", opt->state_dict());
        opt = std::make_unique<Opt>(std::vector<Tensor>{p}, options);
        opt->load_state_dict(ember::nn::read_safetensors("/tmp/ember_optim_resume.safetensors"));
      }
      opt->zero_grad();
      ember::sum(ember::mul(ember::pow(ember::sub(p, t), 2.0), 1.0 + step)).backward();
      opt->step();
    }
    return p.detach();
  };
  CHECK(ember::allclose(run(true), run(false), 0, 0));
}

}  // namespace

TEST_CASE("every optimizer resumed from its state_dict continues bit for bit") {
  check_resume<optim::Adam>(optim::AdamOptions{.lr = 0.1, .amsgrad = true});
  check_resume<optim::AdamW>(optim::AdamWOptions{.lr = 0.1});
  check_resume<optim::RMSprop>(optim::RMSpropOptions{.lr = 0.01, .momentum = 0.9, .centered = true});
  check_resume<optim::Adagrad>(optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.1});
  check_resume<optim::SGD>(optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
}

TEST_CASE("Adam's state_dict names PyTorch's buffers and the step; load_state_dict checks everything first") {
  Tensor p = ember::ones({3}).requires_grad_();
  optim::Adam opt({p}, {.lr = 0.1, .amsgrad = true});
  ember::sum(ember::mul(p, p)).backward();
  opt.step();
  auto state = opt.state_dict();
  for (const char* key : {"state.0.exp_avg", "state.0.exp_avg_sq", "state.0.max_exp_avg_sq", "state.0.step",
                          "group.0.lr", "group.0.momentum"}) {
    CHECK(state.count(key) == 1);
  }
  CHECK(state.at("state.0.step").item<int64_t>() == 1);
  CHECK(state.at("group.0.momentum").item<double>() == 0.9);
  const Tensor exp_avg = opt.state(0, "exp_avg").clone();
  auto bad = state;
  bad["state.0.exp_avg"] = ember::zeros({3});
  bad["state.0.momentum_buffer"] = ember::zeros({3});
  REQUIRE_THROWS_WITH(opt.load_state_dict(bad), Catch::Contains("Adam::load_state_dict: unexpected key "
                                                                "\"state.0.momentum_buffer\""));
  REQUIRE_THROWS_WITH(opt.load_state_dict({{"state.0.step", ember::tensor({1.5})}}),
                      Catch::Contains("\"state.0.step\" must be a step count >= 0, got 1.5"));
  REQUIRE_THROWS_WITH(opt.load_state_dict({{"state.0.exp_avg", ember::zeros({2})}}),
                      Catch::Contains("has shape [2] but parameter 0 is [3]"));
  REQUIRE_THROWS_WITH(opt.load_state_dict({{"group.1.lr", ember::tensor({0.1})}}),
                      Catch::Contains("names group 1 but there are 1"));
  CHECK(ember::allclose(opt.state(0, "exp_avg"), exp_avg, 0, 0));
  CHECK(opt.step_count(0) == 1);
  REQUIRE_THROWS_WITH(opt.state(0, "sum"), Catch::Contains("Adam: parameter 0 has no state \"sum\""));
}

TEST_CASE("optimizer state follows its parameter's dtype; Adagrad's accumulator starts at its initial value") {
  Tensor p = ember::ones({2, 2}).requires_grad_();
  optim::Adagrad opt({p}, {.lr = 0.1, .initial_accumulator_value = 0.25});
  ember::sum(p).backward();
  opt.step();
  // sum = 0.25 + 1² per element; p = 1 − 0.1 · 1 / (√1.25 + eps).
  CHECK(ember::allclose(opt.state(0, "sum"), ember::full({2, 2}, 1.25), 0, 0));
  CHECK(ember::allclose(p.detach(), ember::full({2, 2}, 1.0f - 0.1f / (std::sqrt(1.25f) + 1e-10f)), 0, 0));
  optim::Adam adam({p}, {.lr = 0.1});
  adam.step();
  {
    // The parameter changes dtype in place (as Module::to does); the state follows at the next step.
    ember::NoGradGuard no_grad;
    Tensor moved = p.detach().to(ember::kFloat64);
    p.impl()->storage = moved.storage();
    p.impl()->dtype = ember::kFloat64;
    p.set_grad(ember::ones({2, 2}, {.dtype = ember::kFloat64}));
  }
  adam.step();
  opt.step();
  CHECK(adam.state(0, "exp_avg").dtype() == ember::kFloat64);
  CHECK(adam.state(0, "exp_avg_sq").dtype() == ember::kFloat64);
  CHECK(opt.state(0, "sum").dtype() == ember::kFloat64);
  CHECK(adam.step_count(0) == 2);
}

TEST_CASE("the new optimizers reject every invalid option as torch.optim does") {
  Tensor p = ember::ones({1}).requires_grad_();
  REQUIRE_THROWS_WITH(optim::Adam({p}, {.lr = -1}), Catch::Contains("Adam: learning rate must be >= 0, got -1"));
  REQUIRE_THROWS_WITH(optim::Adam({p}, {.betas = {1.0, 0.999}}), Catch::Contains("Adam: betas[0] must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, {.betas = {0.9, -0.1}}), Catch::Contains("AdamW: betas[1] must be in [0, 1)"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, {.eps = -1e-8}), Catch::Contains("AdamW: eps must be >= 0"));
  REQUIRE_THROWS_WITH(optim::RMSprop({p}, {.momentum = -0.5}), Catch::Contains("RMSprop: momentum must be >= 0"));
  REQUIRE_THROWS_WITH(optim::RMSprop({p}, {.alpha = -0.5}), Catch::Contains("RMSprop: alpha must be >= 0"));
  REQUIRE_THROWS_WITH(optim::Adagrad({p}, {.lr_decay = -1}), Catch::Contains("Adagrad: lr_decay must be >= 0"));
  REQUIRE_THROWS_WITH(optim::Adagrad({p}, {.initial_accumulator_value = -1}),
                      Catch::Contains("Adagrad: initial_accumulator_value must be >= 0"));
  Tensor nonleaf = ember::mul(p, 2.0);
  REQUIRE_THROWS_WITH(optim::Adam({nonleaf}), Catch::Contains("Adam: every parameter must be a leaf tensor"));
  optim::Adagrad adagrad({p});
  CHECK(adagrad.momenta().empty());
  REQUIRE_THROWS_WITH(adagrad.set_momenta({0.9}), Catch::Contains("Adagrad has no momentum option to set"));
}
