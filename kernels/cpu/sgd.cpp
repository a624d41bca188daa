#include "ember/kernels/cpu/sgd.h"

#include <omp.h>

#include <cassert>

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {

namespace {

template <class T>
void sgd_update(const SgdTensor<T>& t, const SgdHyper& step) {
  const T lr = T(step.lr), mom = T(step.momentum), damp = T(1.0 - step.dampening);
  const T wd = T(step.weight_decay);
  const int64_t n = t.numel;
  const int threads = (n >= 65536 && !omp_in_parallel()) ? get_num_threads() : 1;
  T* param = t.param;
  const T* grad = t.grad;
  T* buf = t.momentum_buffer;
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
    const T b = t.first_step ? d : mom * buf[i] + damp * d;
    buf[i] = b;
    d = step.nesterov ? d + mom * b : b;
    param[i] = param[i] - lr * d;
  }
}

}  // namespace

template <class T>
void sgd_update_multi(const SgdTensor<T>* tensors, size_t count, const SgdHyper& hyper) {
  for (size_t i = 0; i < count; ++i) sgd_update(tensors[i], hyper);
}

template void sgd_update_multi<float>(const SgdTensor<float>*, size_t, const SgdHyper&);
template void sgd_update_multi<double>(const SgdTensor<double>*, size_t, const SgdHyper&);

}  // namespace ember::kernels::cpu
