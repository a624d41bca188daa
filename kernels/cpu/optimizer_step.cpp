// Built with -ffp-contract=off (kernels/CMakeLists.txt): every clone rounds as the rules are
// written, so AVX-512, AVX2 and SSE2 machines, and the CUDA kernels, give the same bits.
#include "ember/kernels/cpu/optimizer_step.h"

#include <omp.h>

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {

namespace {

constexpr int64_t kParallelElements = 65536;

template <class T, class Rule>
__attribute__((always_inline)) inline void apply_range(const OptimizerTensor<T>& t, const Rule& rule, int64_t begin,
                                                       int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) rule(t, i);
}

// One cloned (AVX-512 / AVX2 / baseline) function per rule and type: target_clones takes no
// templates (threading.h).
#define EMBER_OPTIMIZER_RANGE(Rule, T)                                                                      \
  EMBER_VECTOR_CLONES void range(const OptimizerTensor<T>& t, const Rule<T>& rule, int64_t begin, int64_t end) { \
    apply_range(t, rule, begin, end);                                                                       \
  }
EMBER_OPTIMIZER_RANGE(SgdRule, float)
EMBER_OPTIMIZER_RANGE(SgdRule, double)
EMBER_OPTIMIZER_RANGE(AdamRule, float)
EMBER_OPTIMIZER_RANGE(AdamRule, double)
EMBER_OPTIMIZER_RANGE(RmspropRule, float)
EMBER_OPTIMIZER_RANGE(RmspropRule, double)
EMBER_OPTIMIZER_RANGE(AdagradRule, float)
EMBER_OPTIMIZER_RANGE(AdagradRule, double)
#undef EMBER_OPTIMIZER_RANGE

template <class T, class Rule>
void apply(const OptimizerTensor<T>* tensors, size_t count, const Rule& rule) {
  for (size_t k = 0; k < count; ++k) {
    const OptimizerTensor<T>& t = tensors[k];
    const int threads = (t.numel >= kParallelElements && !omp_in_parallel()) ? get_num_threads() : 1;
    parallel_ranges(t.numel, threads, [&](int64_t begin, int64_t end) { range(t, rule, begin, end); });
  }
}

}  // namespace

template <class T>
void sgd_step(const OptimizerTensor<T>* tensors, size_t count, const SgdRule<T>& rule) {
  apply(tensors, count, rule);
}
template <class T>
void adam_step(const OptimizerTensor<T>* tensors, size_t count, const AdamRule<T>& rule) {
  apply(tensors, count, rule);
}
template <class T>
void rmsprop_step(const OptimizerTensor<T>* tensors, size_t count, const RmspropRule<T>& rule) {
  apply(tensors, count, rule);
}
template <class T>
void adagrad_step(const OptimizerTensor<T>* tensors, size_t count, const AdagradRule<T>& rule) {
  apply(tensors, count, rule);
}

#define EMBER_INSTANTIATE(T)                                                                   \
  template void sgd_step<T>(const OptimizerTensor<T>*, size_t, const SgdRule<T>&);            \
  template void adam_step<T>(const OptimizerTensor<T>*, size_t, const AdamRule<T>&);          \
  template void rmsprop_step<T>(const OptimizerTensor<T>*, size_t, const RmspropRule<T>&);    \
  template void adagrad_step<T>(const OptimizerTensor<T>*, size_t, const AdagradRule<T>&);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cpu
