// Internal to nn/: the three directions of a 2-D convolution, each dispatched to the CPU
// kernels, cuDNN or the hand-written CUDA kernels as the KernelContext says, with their
// workspaces. conv2d runs them as they are; conv_transpose2d runs them mirrored (its forward is
// conv2d's input gradient, its input gradient conv2d's forward).
// defines: ember::nn::functional::detail::{conv_forward, conv_backward_input, conv_backward_weight}
#pragma once

#include "ember/core/kernel_context.h"
#include "ember/kernels/conv2d.h"
#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cuda/conv2d.h"
#include "ember/kernels/vendor/cudnn_conv.h"

namespace ember::nn::functional::detail {

// y = conv(x, w) + bias (bias may be null), as kernels::cpu::conv2d_forward.
template <class T>
void conv_forward(KernelContext& on, const T* x, const T* w, const T* bias, T* y, const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_forward_workspace(s));
    kernels::cpu::conv2d_forward<T>(x, w, bias, y, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_forward_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_forward<T>(x, w, bias, y, s, space, bytes, on.stream());
  } else {
    kernels::cuda::conv2d_forward<T>(x, w, bias, y, s, on.stream());
  }
}

// dx given dy, as kernels::cpu::conv2d_backward_input.
template <class T>
void conv_backward_input(KernelContext& on, const T* dy, const T* w, T* dx, const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_backward_input_workspace(s));
    kernels::cpu::conv2d_backward_input<T>(dy, w, dx, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_backward_input_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_backward_input<T>(dy, w, dx, s, space, bytes, on.stream());
  } else {
    kernels::cuda::conv2d_backward_input<T>(dy, w, dx, s, on.stream());
  }
}

// dw and (when dbias is not null) dbias given dy and x, as kernels::cpu::conv2d_backward_weight.
template <class T>
void conv_backward_weight(KernelContext& on, const T* dy, const T* x, T* dw, T* dbias,
                          const kernels::Conv2dShape& s) {
  if (on.cpu()) {
    T* space = on.workspace<T>(kernels::cpu::conv2d_backward_weight_workspace(s));
    kernels::cpu::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space);
  } else if (on.vendor()) {
    size_t bytes = kernels::vendor::conv2d_backward_weight_workspace<T>(s, on.stream());
    void* space = on.workspace_bytes(static_cast<int64_t>(bytes));
    kernels::vendor::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space, bytes, on.stream());
  } else {
    T* space = on.workspace<T>(kernels::cuda::conv2d_backward_weight_workspace(s));
    kernels::cuda::conv2d_backward_weight<T>(dy, x, dw, dbias, s, space, on.stream());
  }
}

}  // namespace ember::nn::functional::detail
