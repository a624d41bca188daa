#include "ember/kernels/cpu/sgd.h"

#include <omp.h>

#include <cassert>

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {

template <class T>
void sgd_update(T* param, const T* grad, T* momentum_buffer_or_null, int64_t n,
                const SgdStep& step) {
  const T lr = T(step.lr), mom = T(step.momentum), damp = T(1.0 - step.dampening);
  const T wd = T(step.weight_decay);
  const int threads = (n >= 65536 && !omp_in_parallel()) ? get_num_threads() : 1;
  T* buf = momentum_buffer_or_null;
  if (step.momentum == 0.0) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      T d = grad[i];
      if (step.weight_decay != 0.0) d = d + wd * param[i];
      param[i] = param[i] - lr * d;
    }
    return;
  }
  assert(buf != nullptr);
#pragma omp parallel for simd num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    T d = grad[i];
    if (step.weight_decay != 0.0) d = d + wd * param[i];
    const T b = step.first_step ? d : mom * buf[i] + damp * d;
    buf[i] = b;
    d = step.nesterov ? d + mom * b : b;
    param[i] = param[i] - lr * d;
  }
}

template void sgd_update<float>(float*, const float*, float*, int64_t, const SgdStep&);
template void sgd_update<double>(double*, const double*, double*, int64_t, const SgdStep&);

}  // namespace ember::kernels::cpu
