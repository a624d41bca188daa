// ember-fashion: trains ResNet-8 (examples/models/blocks.h) on Fashion-MNIST, the recipe of
// issue 18: batch 128, SGD lr 0.1 momentum 0.9 Nesterov, weight decay 5e-4, cosine annealing
// per batch over the run (or --optimizer adamw). The flags, the loop, --save / --resume, the
// devices are ember-mnist's (examples/common/trainer.cpp); `ember-fashion --help` lists them.
// Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist, scripts/setup installs it).
#include <memory>

#include "examples/common/trainer.h"
#include "examples/models/blocks.h"  // defines: ember::models::resnet8

int main(int argc, char** argv) {
  const ember::examples::Recipe recipe{
      .program = "ember-fashion",
      .description = "ember-fashion: trains ResNet-8 (BasicBlocks of 16, 32, 64 channels, BatchNorm) on Fashion-MNIST",
      .data_help = "install Debian's dataset-fashion-mnist (bash scripts/setup), which puts the files in "
                   "/usr/share/datasets/fashion-mnist",
      .defaults = {.data = "/usr/share/datasets/fashion-mnist", .epochs = 5, .batch_size = 128, .lr = 0.1,
                   .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true, .schedule = "cosine"},
      .make_model = [] { return std::static_pointer_cast<ember::nn::Module>(ember::models::resnet8()); },
      .normalize = {.mean = 0.2860, .std = 0.3530},
  };
  return ember::examples::run_program(argc, argv, recipe);
}
