#include "ember/optim/step_lr.h"

#include <cmath>

#include "ember/common/error.h"

namespace ember::optim {

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : optimizer_(optimizer), base_rates_(optimizer.learning_rates()), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
}

void StepLR::step() {
  ++epoch_;
  // From the base rates, as PyTorch's closed form: lr = base · gamma^(epoch / step_size).
  double factor = std::pow(gamma_, static_cast<double>(epoch_ / step_size_));
  std::vector<double> rates = base_rates_;
  for (double& r : rates) r *= factor;
  optimizer_.set_learning_rates(rates);
}

}  // namespace ember::optim
