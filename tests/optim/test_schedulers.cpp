// The schedulers against torch.optim.lr_scheduler (tests/gen_optim_fixtures.py): every rate (and,
// for OneCycleLR, momentum) after the constructor and after each step, over two param groups;
// each also saved halfway through its schedule and resumed into fresh objects.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>

#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/sgd.h"

using ember::Tensor;
namespace optim = ember::optim;

namespace {

// The generator's optimizers: two groups, at 0.1 and 0.05.
std::unique_ptr<optim::Optimizer> sgd_two_groups() {
  Tensor p0 = ember::zeros({2}).requires_grad_(), p1 = ember::zeros({2}).requires_grad_();
  return std::make_unique<optim::SGD>(std::vector<optim::SGDParamGroup>{
      {{p0}, {.lr = 0.1, .momentum = 0.9}}, {{p1}, {.lr = 0.05, .momentum = 0.9}}});
}
std::unique_ptr<optim::Optimizer> adam_two_groups() {
  Tensor p0 = ember::zeros({2}).requires_grad_(), p1 = ember::zeros({2}).requires_grad_();
  return std::make_unique<optim::Adam>(std::vector<optim::ParamGroup<optim::AdamOptions>>{
      {{p0}, {.lr = 0.1}}, {{p1}, {.lr = 0.05}}});
}

struct Case {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>()> make_optimizer;
  std::function<std::shared_ptr<optim::Scheduler>(optim::Optimizer&)> make_scheduler;
  bool checks_momentum = false;
};

std::vector<Case> cases() {
  using S = std::shared_ptr<optim::Scheduler>;
  std::vector<Case> out;
  out.push_back({"step", sgd_two_groups, [](optim::Optimizer& o) -> S { return std::make_shared<optim::StepLR>(o, 3, 0.5); }});
  out.push_back({"multistep", sgd_two_groups, [](optim::Optimizer& o) -> S {
                   return std::make_shared<optim::MultiStepLR>(o, std::vector<int64_t>{2, 5, 6}, 0.3); }});
  out.push_back({"exponential", sgd_two_groups,
                 [](optim::Optimizer& o) -> S { return std::make_shared<optim::ExponentialLR>(o, 0.9); }});
  out.push_back({"linear", sgd_two_groups,
                 [](optim::Optimizer& o) -> S { return std::make_shared<optim::LinearLR>(o, 0.25, 1.0, 4); }});
  out.push_back({"cosine", sgd_two_groups,
                 [](optim::Optimizer& o) -> S { return std::make_shared<optim::CosineAnnealingLR>(o, 7, 0.001); }});
  out.push_back({"onecycle_cos", sgd_two_groups, [](optim::Optimizer& o) -> S {
                   return std::make_shared<optim::OneCycleLR>(o, std::vector<double>{1.0, 0.5},
                                                              optim::OneCycleLROptions{.total_steps = 20}); }, true});
  out.push_back({"onecycle_linear_adam", adam_two_groups, [](optim::Optimizer& o) -> S {
                   return std::make_shared<optim::OneCycleLR>(
                       o, 0.3, optim::OneCycleLROptions{.total_steps = 16, .pct_start = 0.25,
                                                        .anneal_strategy = optim::OneCycleLROptions::Anneal::Linear,
                                                        .base_momentum = 0.8, .max_momentum = 0.9, .div_factor = 10,
                                                        .final_div_factor = 100, .three_phase = true}); }, true});
  out.push_back({"sequential", sgd_two_groups, [](optim::Optimizer& o) -> S {
                   auto warmup = std::make_shared<optim::LinearLR>(o, 0.1, 1.0, 3);
                   auto cosine = std::make_shared<optim::CosineAnnealingLR>(o, 6);
                   return std::make_shared<optim::SequentialLR>(
                       o, std::vector<std::shared_ptr<optim::LRScheduler>>{warmup, cosine}, std::vector<int64_t>{3}); }});
  out.push_back({"plateau_min", sgd_two_groups, [](optim::Optimizer& o) -> S {
                   return std::make_shared<optim::ReduceLROnPlateau>(
                       o, optim::ReduceLROnPlateauOptions{.factor = 0.5, .patience = 2, .threshold = 0.01,
                                                          .cooldown = 1, .min_lr = {0.01, 0.02}}); }});
  out.push_back({"plateau_max_abs", sgd_two_groups, [](optim::Optimizer& o) -> S {
                   using P = optim::ReduceLROnPlateauOptions;
                   return std::make_shared<optim::ReduceLROnPlateau>(
                       o, P{.mode = P::Mode::Max, .factor = 0.1, .patience = 1, .threshold = 1.0,
                            .threshold_mode = P::ThresholdMode::Abs}); }});
  return out;
}

void step(optim::Scheduler& s, const std::map<std::string, Tensor>& f, int64_t k) {
  if (auto* plateau = dynamic_cast<optim::ReduceLROnPlateau*>(&s)) {
    plateau->step(f.at("metrics")[k].item<double>());
  } else {
    dynamic_cast<optim::LRScheduler&>(s).step();
  }
}

void check_row(const Case& c, const std::map<std::string, Tensor>& f, const optim::Optimizer& opt,
               const optim::Scheduler& s, int64_t row, const std::string& when) {
  const std::vector<double> rates = opt.learning_rates(), last = s.get_last_lr(), moms = opt.momenta();
  for (size_t g = 0; g < rates.size(); ++g) {
    const double want = f.at("lr")[row][g].item<double>();
    INFO(c.name << " " << when << ", row " << row << ", group " << g << ": lr " << rates[g] << ", PyTorch " << want);
    CHECK(rates[g] == Approx(want).epsilon(1e-12).margin(1e-15));
    CHECK(last[g] == rates[g]);
    if (c.checks_momentum) {
      const double want_m = f.at("momentum")[row][g].item<double>();
      INFO("momentum " << moms[g] << ", PyTorch " << want_m);
      CHECK(moms[g] == Approx(want_m).epsilon(1e-12));
    }
  }
}

}  // namespace

TEST_CASE("every scheduler sets PyTorch's rates step by step, and resumes from its state halfway") {
  for (const Case& c : cases()) {
    const auto f = ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/sched_" + c.name + ".safetensors");
    const int64_t steps = f.at("lr").size(0) - 1;
    auto opt = c.make_optimizer();
    auto scheduler = c.make_scheduler(*opt);
    check_row(c, f, *opt, *scheduler, 0, "built");
    for (int64_t k = 0; k < steps; ++k) {
      step(*scheduler, f, k);
      check_row(c, f, *opt, *scheduler, k + 1, "uninterrupted");
    }
    // Halfway: both states through a safetensors file into a fresh optimizer and scheduler.
    auto first = c.make_optimizer();
    auto first_scheduler = c.make_scheduler(*first);
    const int64_t half = steps / 2;
    for (int64_t k = 0; k < half; ++k) step(*first_scheduler, f, k);
    ember::nn::write_safetensors("/tmp/ember_sched_resume.safetensors", first_scheduler->state_dict());
    ember::nn::write_safetensors("/tmp/ember_sched_resume_opt.safetensors", first->state_dict());
    auto resumed = c.make_optimizer();
    auto resumed_scheduler = c.make_scheduler(*resumed);
    resumed->load_state_dict(ember::nn::read_safetensors("/tmp/ember_sched_resume_opt.safetensors"));
    resumed_scheduler->load_state_dict(ember::nn::read_safetensors("/tmp/ember_sched_resume.safetensors"));
    check_row(c, f, *resumed, *resumed_scheduler, half, "resumed");
    for (int64_t k = half; k < steps; ++k) {
      step(*resumed_scheduler, f, k);
      check_row(c, f, *resumed, *resumed_scheduler, k + 1, "resumed");
    }
  }
}

TEST_CASE("schedulers reject bad arguments and bad state with messages that name them") {
  auto opt = sgd_two_groups();
  REQUIRE_THROWS_WITH(optim::StepLR(*opt, 0), Catch::Contains("StepLR: step_size must be positive, got 0"));
  REQUIRE_THROWS_WITH(optim::CosineAnnealingLR(*opt, 0), Catch::Contains("CosineAnnealingLR: T_max must be positive"));
  REQUIRE_THROWS_WITH(optim::LinearLR(*opt, 0.0), Catch::Contains("LinearLR: start_factor must be in (0, 1], got 0"));
  REQUIRE_THROWS_WITH(optim::MultiStepLR(*opt, {5, 2}), Catch::Contains("milestones must be in increasing order"));
  REQUIRE_THROWS_WITH(optim::OneCycleLR(*opt, std::vector<double>{1.0}, {.total_steps = 10}),
                      Catch::Contains("OneCycleLR: 1 max_lr values for 2 param groups"));
  REQUIRE_THROWS_WITH(optim::OneCycleLR(*opt, 1.0, {}), Catch::Contains("total_steps must be positive, got 0"));
  Tensor p = ember::zeros({2}).requires_grad_();
  optim::Adagrad adagrad({p});
  REQUIRE_THROWS_WITH(optim::OneCycleLR(adagrad, 1.0, {.total_steps = 4}),
                      Catch::Contains("cycle_momentum needs an optimizer with a momentum"));
  optim::OneCycleLR one_cycle(*opt, 1.0, {.total_steps = 2});
  one_cycle.step();
  one_cycle.step();
  REQUIRE_THROWS_WITH(one_cycle.step(), Catch::Contains("OneCycleLR: stepped 3 times but total_steps is 2"));
  REQUIRE_THROWS_WITH(optim::ReduceLROnPlateau(*opt, {.factor = 1.0}), Catch::Contains("factor must be in [0, 1)"));
  REQUIRE_THROWS_WITH(optim::ReduceLROnPlateau(*opt, {.min_lr = {0, 0, 0}}), Catch::Contains("expected 1 or 2 min_lr"));
  auto warmup = std::make_shared<optim::LinearLR>(*opt);
  REQUIRE_THROWS_WITH(optim::SequentialLR(*opt, {warmup}, {3}), Catch::Contains("one milestone fewer than schedulers"));
  auto other = sgd_two_groups();
  auto foreign = std::make_shared<optim::StepLR>(*other, 2);
  REQUIRE_THROWS_WITH(optim::SequentialLR(*opt, {warmup, foreign}, {3}), Catch::Contains("scheduler 1 drives another"));

  optim::StepLR step_lr(*opt, 2);
  step_lr.step();
  auto state = step_lr.state_dict();
  REQUIRE_THROWS_WITH(step_lr.load_state_dict({{"last_epoch", state.at("last_epoch")}}),
                      Catch::Contains("StepLR::load_state_dict: missing key \"base_lrs\""));
  auto extra = state;
  extra["gamma"] = ember::tensor({0.5});
  REQUIRE_THROWS_WITH(step_lr.load_state_dict(extra), Catch::Contains("unexpected key \"gamma\""));
  auto short_bases = state;
  short_bases["base_lrs"] = ember::tensor({0.1});
  REQUIRE_THROWS_WITH(step_lr.load_state_dict(short_bases), Catch::Contains("\"base_lrs\" must hold 2 numbers"));
  CHECK(step_lr.last_epoch() == 1);
  one_cycle.load_state_dict(one_cycle.state_dict());
  auto too_far = one_cycle.state_dict();
  too_far["last_epoch"] = ember::tensor(std::vector<int64_t>{9});
  REQUIRE_THROWS_WITH(one_cycle.load_state_dict(too_far), Catch::Contains("stepped 9 times but total_steps is 2"));
  CHECK(one_cycle.last_epoch() == 2);
}
