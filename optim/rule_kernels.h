// One bucket of parameter updates to an optimizer rule's kernel, on the CPU or the bucket's GPU:
// what every optimizer's update() does once it has built its rule (kernels/optimizer_step.h).
// defines: ember::optim::detail::apply_rule
#pragma once

#include <utility>
#include <vector>

#include "ember/core/kernel_context.h"
#include "ember/kernels/optimizer_step.h"
#include "ember/optim/param_group_optimizer.h"

namespace ember::optim::detail {

template <class T, class Rule>
using CpuRuleKernel = void (*)(const kernels::OptimizerTensor<T>*, size_t, const Rule&);
template <class T, class Rule>
using CudaRuleKernel = void (*)(const kernels::OptimizerTensor<T>*, size_t, const Rule&, kernels::Stream);

// `coefficients(step)` gives a parameter's two per-tensor coefficients from its step count.
template <class T, class Rule, class Coefficients>
void apply_rule(const char* op, std::vector<ParamUpdate>& bucket, const Rule& rule, const Coefficients& coefficients,
                CpuRuleKernel<T, Rule> cpu, CudaRuleKernel<T, Rule> cuda) {
  std::vector<kernels::OptimizerTensor<T>> tensors;
  tensors.reserve(bucket.size());
  for (ParamUpdate& u : bucket) {
    kernels::OptimizerTensor<T> t;
    t.param = u.param.template mutable_data<T>(op);
    t.grad = u.grad.template data<T>();
    for (size_t slot = 0; slot < kMaxStateBuffers; ++slot) {
      if (u.buffers[slot].defined()) t.state[slot] = u.buffers[slot].template data<T>();
    }
    t.numel = u.param.numel();
    const std::pair<double, double> c = coefficients(u.step);
    t.coefficient[0] = T(c.first);
    t.coefficient[1] = T(c.second);
    t.first_step = u.first_step;
    tensors.push_back(t);
  }
  KernelContext on(bucket.front().param);
  if (on.cpu()) {
    cpu(tensors.data(), tensors.size(), rule);
  } else {
    cuda(tensors.data(), tensors.size(), rule, on.stream());
  }
}

}  // namespace ember::optim::detail
