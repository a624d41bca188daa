// ember-mnist: trains the tutorial network on MNIST, from top to bottom in the order a user
// writes it: the model, the device, the data, the loop (examples/common/trainer.cpp, shared with
// ember-fashion). `ember-mnist --help` lists the flags. Several devices: --devices cuda:0,cuda:1
// (or --gpus 2, or cpu,cpu for CPU replicas) wraps the model in parallel::DataParallel;
// `mpirun -np N ember-mnist --distributed` trains one replica per process, each on its rows of
// every batch, and rank 0 logs and saves.
#include <memory>

#include "examples/common/trainer.h"
#include "examples/mnist/net.h"  // defines: ember::examples::Net

int main(int argc, char** argv) {
  const ember::examples::Recipe recipe{
      .program = "ember-mnist",
      .description = "ember-mnist: trains the tutorial network (Conv-Pool-ReLU x2, Linear) on MNIST",
      .data_help = "run scripts/fetch-mnist with that folder to download MNIST there",
      .defaults = {.data = "data/mnist", .epochs = 10, .batch_size = 64, .lr = 0.01, .momentum = 0.9},
      .make_model = [] { return std::make_shared<ember::examples::Net>(); },
      .normalize = {.mean = 0.1307, .std = 0.3081},
  };
  return ember::examples::run_program(argc, argv, recipe);
}
