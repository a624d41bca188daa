#include "ember/optim/optimizer.h"

namespace ember::optim {

void Optimizer::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

}  // namespace ember::optim
