// A training run interrupted by a checkpoint (model, optimizer, scheduler, generator in one file)
// and resumed into fresh objects ends bit-identical to the uninterrupted run; a checkpoint that
// does not fit is refused whole.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/activation.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/conv.h"
#include "ember/nn/dropout.h"
#include "ember/nn/functional.h"
#include "ember/nn/linear.h"
#include "ember/nn/normalization.h"
#include "ember/nn/sequential.h"
#include "ember/optim/adam.h"
#include "ember/optim/sgd.h"
#include "ember/optim/training_checkpoint.h"

using ember::Tensor;
namespace nn = ember::nn;
namespace optim = ember::optim;

namespace {

// BatchNorm's running statistics and Dropout's draws from the default generator are state that
// a resume must carry too.
std::shared_ptr<nn::Sequential> small_net() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(nn::Conv2d(1, 4, 3));
  net->push_back(nn::BatchNorm2d(4));
  net->push_back(nn::ReLU());
  net->push_back(nn::Dropout(0.3));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(4 * 6 * 6, 3));
  return net;
}

struct Run {
  std::shared_ptr<nn::Sequential> net;
  std::unique_ptr<optim::Optimizer> opt;
  std::unique_ptr<optim::LRScheduler> scheduler;
};

Run make_run(bool adam, uint64_t seed) {
  ember::manual_seed(seed);
  Run r;
  r.net = small_net();
  if (adam) {
    r.opt = std::make_unique<optim::AdamW>(r.net->parameters(), optim::AdamWOptions{.lr = 0.01, .amsgrad = true});
  } else {
    r.opt = std::make_unique<optim::SGD>(r.net->parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9,
                                                                                 .weight_decay = 5e-4,
                                                                                 .nesterov = true});
  }
  r.scheduler = std::make_unique<optim::CosineAnnealingLR>(*r.opt, 8);
  return r;
}

// Step k of the run: a fixed batch per step (made without the generator), forward, backward,
// step, schedule.
void train_step(Run& r, int k) {
  std::vector<float> pixels(4 * 64);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::sin(0.37f * static_cast<float>(i) + 1.3f * k);
  const Tensor x = ember::tensor(pixels).view({4, 1, 8, 8});
  const Tensor y = ember::tensor(std::vector<int64_t>{k % 3, (k + 1) % 3, (k + 2) % 3, k % 3});
  r.opt->zero_grad();
  nn::functional::cross_entropy(r.net->forward(x), y).backward();
  r.opt->step();
  r.scheduler->step();
}

void check_same(Run& a, Run& b) {
  const auto sa = a.net->state_dict(), sb = b.net->state_dict();
  REQUIRE(sa.size() == sb.size());
  for (const auto& [name, t] : sa) {
    INFO(name);
    CHECK(ember::allclose(t, sb.at(name), 0, 0));
  }
  CHECK(a.opt->learning_rates() == b.opt->learning_rates());
}

}  // namespace

TEST_CASE("a run resumed from a training checkpoint ends bit-identical to the uninterrupted run") {
  for (bool adam : {false, true}) {
    INFO((adam ? "AdamW" : "SGD nesterov") << " + CosineAnnealingLR");
    Run whole = make_run(adam, 7);
    for (int k = 0; k < 6; ++k) train_step(whole, k);

    Run first = make_run(adam, 7);
    for (int k = 0; k < 3; ++k) train_step(first, k);
    const std::string path = "/tmp/ember_training_checkpoint.safetensors";
    optim::save_training_checkpoint(path, *first.net, *first.opt, first.scheduler.get(), {.epoch = 1, .step = 3});
    ember::manual_seed(999);  // the generator moves on (another process, another run) before the resume

    Run resumed = make_run(adam, 12345);  // different initial weights: all come from the file
    const optim::TrainingProgress progress =
        optim::load_training_checkpoint(path, *resumed.net, *resumed.opt, resumed.scheduler.get());
    CHECK(progress.epoch == 1);
    CHECK(progress.step == 3);
    for (int k = 3; k < 6; ++k) train_step(resumed, k);
    check_same(whole, resumed);
  }
}

TEST_CASE("load_training_checkpoint refuses a checkpoint that does not fit, and changes nothing") {
  Run r = make_run(false, 1);
  train_step(r, 0);
  const std::string path = "/tmp/ember_training_checkpoint_bad.safetensors";
  optim::save_training_checkpoint(path, *r.net, *r.opt, r.scheduler.get(), {.epoch = 2, .step = 1});

  Run other = make_run(true, 2);  // an AdamW run: the saved SGD state does not fit it
  const auto weights = other.net->state_dict().begin()->second.clone();
  REQUIRE_THROWS_WITH(optim::load_training_checkpoint(path, *other.net, *other.opt, other.scheduler.get()),
                      Catch::Contains("load_training_checkpoint: " + path + ": the optimizer state does not fit: "
                                      "AdamW::load_state_dict: unexpected key \"state.0.momentum_buffer\""));
  CHECK(ember::allclose(other.net->state_dict().begin()->second, weights, 0, 0));  // the model was put back
  REQUIRE_THROWS_WITH(optim::load_training_checkpoint(path, *other.net, *other.opt, nullptr),
                      Catch::Contains("holds a scheduler's state; pass the scheduler"));
  ember::save(*r.net, "/tmp/ember_plain_model.safetensors");
  REQUIRE_THROWS_WITH(optim::load_training_checkpoint("/tmp/ember_plain_model.safetensors", *r.net, *r.opt,
                                                      r.scheduler.get()),
                      Catch::Contains("has no \"meta.epoch\" entry"));
}
