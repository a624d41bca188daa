// The direct depthwise convolution (groups == in_channels, out_channels = in_channels *
// multiplier), forward and both backwards. Internal to kernels/cpu: conv2d_forward,
// conv2d_backward_input and conv2d_backward_weight route every Conv2dShape::depthwise() here.
// defines: ember::kernels::cpu::depthwise_forward, depthwise_backward_input,
//          depthwise_backward_weight
#pragma once

#include "ember/kernels/conv2d.h"

namespace ember::kernels::cpu {

// All require s.depthwise() and what conv2d_forward requires; no workspace. Output channel k reads
// input channel k / (out_channels / in_channels). Each output plane, dx plane and dw channel is
// computed by one thread in a fixed order: the same result for every thread count.

// y = conv(x, w) + bias (bias_or_null may be nullptr). Overwrites y.
template <class T>
void depthwise_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s);

// dx given dy. Overwrites dx (positions no window reads get 0).
template <class T>
void depthwise_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s);

// dw given dy and x (no bias gradient). Overwrites dw.
template <class T>
void depthwise_backward_weight(const T* dy, const T* x, T* dw, const Conv2dShape& s);

}  // namespace ember::kernels::cpu
