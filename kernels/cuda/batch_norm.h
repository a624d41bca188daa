// Batch normalisation over [N, C, spatial] on one CUDA device: the twins of
// kernels/cpu/batch_norm.h, with the same arguments plus a trailing stream.
// defines: ember::kernels::cuda::batch_norm_forward_training, batch_norm_forward_eval,
//          batch_norm_backward
//
// Requires device pointers on the stream's device; launches asynchronously on `stream`. T is
// float or double; per-channel sums are taken in double, as on the CPU. weight and bias may be
// null (1 and 0). The statistics and the backward's sums give each channel one block; the
// forwards' normalisation is a grid-stride pass over all elements.
#pragma once

#include <cstdint>

#include "ember/kernels/batch_norm.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// As kernels::cpu::batch_norm_forward_training: batch statistics into save_mean and save_invstd,
// the running statistics (when not null) updated in place with the unbiased variance, then y.
template <class T>
void batch_norm_forward_training(const T* x, const T* weight, const T* bias, T* y, T* save_mean, T* save_invstd,
                                 T* running_mean, T* running_var, double momentum, double eps,
                                 const BatchNormShape& s, Stream stream);

// As kernels::cpu::batch_norm_forward_eval.
template <class T>
void batch_norm_forward_eval(const T* x, const T* mean, const T* var, const T* weight, const T* bias, T* y,
                             T* save_invstd, double eps, const BatchNormShape& s, Stream stream);

// As kernels::cpu::batch_norm_backward.
template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* mean, const T* invstd, const T* weight, T* dx,
                         T* dweight, T* dbias, bool training, const BatchNormShape& s, Stream stream);

}  // namespace ember::kernels::cuda
