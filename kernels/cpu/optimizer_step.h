// The optimizers' updates on the CPU, many parameters per call like their CUDA twins
// (kernels/cuda/optimizer_step.h), by the rules of kernels/optimizer_step.h.
// defines: ember::kernels::cpu::{sgd_step, adam_step, rmsprop_step, adagrad_step}
#pragma once

#include <cstddef>

#include "ember/kernels/optimizer_step.h"

namespace ember::kernels::cpu {

// Applies `rule` to every element of tensors[0, count), one pass per tensor, vectorised (AVX-512,
// AVX2 or SSE2, picked at load time); threads split a tensor of 64k elements or more. Each
// element is computed alone, so the result does not depend on the thread count.
template <class T>
void sgd_step(const OptimizerTensor<T>* tensors, size_t count, const SgdRule<T>& rule);
template <class T>
void adam_step(const OptimizerTensor<T>* tensors, size_t count, const AdamRule<T>& rule);
template <class T>
void rmsprop_step(const OptimizerTensor<T>* tensors, size_t count, const RmspropRule<T>& rule);
template <class T>
void adagrad_step(const OptimizerTensor<T>* tensors, size_t count, const AdagradRule<T>& rule);

}  // namespace ember::kernels::cpu
