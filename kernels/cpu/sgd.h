// One step of stochastic gradient descent with momentum, exactly torch.optim.SGD's update rule
// (kernels/sgd.h), for many parameters at once like its CUDA twin.
// defines: ember::kernels::cpu::sgd_update_multi
#pragma once

#include <cstddef>

#include "ember/kernels/sgd.h"

namespace ember::kernels::cpu {

// Updates every tensor of `tensors[0, count)` by kernels/sgd.h's rule, in one pass per tensor
// (threads split a large one).
template <class T>
void sgd_update_multi(const SgdTensor<T>* tensors, size_t count, const SgdHyper& hyper);

}  // namespace ember::kernels::cpu
