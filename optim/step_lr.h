// Decays every group's learning rate by gamma every step_size epochs, as torch.optim.lr_scheduler.StepLR.
// defines: ember::optim::StepLR
#pragma once

#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

class StepLR {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  void step();  // call once per epoch, after the epoch's optimizer steps
  std::vector<double> get_last_lr() const { return optimizer_.learning_rates(); }
  int64_t last_epoch() const { return epoch_; }

 private:
  Optimizer& optimizer_;
  std::vector<double> base_rates_;
  int64_t step_size_;
  double gamma_;
  int64_t epoch_ = 0;
};

}  // namespace ember::optim
