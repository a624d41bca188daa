// Checkpoints of a training run: the model, the optimizer, the scheduler, the default random
// generator and the run's counters in one safetensors file, written atomically.
// defines: ember::optim::TrainingProgress, save_training_checkpoint, load_training_checkpoint
//
// Layout (documented in docs/training.md): "model.<name>" (module.state_dict()),
// "optim.<key>" (optimizer.state_dict()), "scheduler.<key>" (scheduler->state_dict(), when there
// is one), "rng.seed" and "rng.offset" (the default generator: dropout and random init draw from
// it), "meta.epoch" and "meta.step", and "extra.<name>" for whatever else the caller keeps;
// metadata {"format": "ember-training"} plus the caller's. ember::load(module, path) does not
// read it; load_training_checkpoint does. A run resumed from it ends bit-identical to an
// uninterrupted one on the CPU, given the same data order (DataLoader's order depends only on
// its seed and the epoch) and the same thread count.
#pragma once

#include <map>
#include <string>

#include "ember/core/tensor.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"

namespace ember::nn {
class Module;
}

namespace ember::optim {

struct TrainingProgress {
  int64_t epoch = 0;  // epochs completed
  int64_t step = 0;   // optimizer steps taken
  std::map<std::string, Tensor> extra;
};

// Writes the checkpoint atomically (nn::write_safetensors: a crash leaves the previous file).
// `scheduler` may be null.
void save_training_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                              const Scheduler* scheduler, const TrainingProgress& progress = {},
                              const std::map<std::string, std::string>& metadata = {});

// Restores everything save_training_checkpoint wrote, all or nothing: a file that is not such
// a checkpoint, or whose model, optimizer or scheduler state does not fit the objects given,
// throws ember::Error naming the file and the part at fault, and leaves model, optimizer,
// scheduler and generator as they were. A checkpoint saved with a scheduler needs one to load into.
TrainingProgress load_training_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer,
                                          Scheduler* scheduler);

}  // namespace ember::optim
