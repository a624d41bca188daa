// The direct (no im2col) float32 forward convolution for stride 1, no padding, no dilation: the
// tutorial's conv1 and conv2. Internal to kernels/cpu: conv2d_forward dispatches here.
// defines: ember::kernels::cpu::direct_forward_applies, direct_forward_workspace,
//          direct_forward
#pragma once

#include <cstdint>

#include "kernels/cpu/conv2d.h"

namespace ember::kernels::cpu {

// True when direct_forward runs s: stride 1, pad 0, dilation 1, and a CPU with AVX-512F or
// AVX2 + FMA (EMBER_GEMM_ISA=avx2 / =scalar narrow the choice, as they do for gemm).
bool direct_forward_applies(const Conv2dShape& s);

// Elements of float direct_forward needs: the weights transposed to [C*R*S, K] plus one
// output scratch per thread of get_num_threads().
int64_t direct_forward_workspace(const Conv2dShape& s);

// y = conv(x, w) + bias, as conv2d_forward. Requires direct_forward_applies(s) and a workspace of
// direct_forward_workspace(s) floats. Guarantees: overwrites y; bit-for-bit the same for every
// thread count (each output is summed by one task, taps in the order c, r, q).
void direct_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                    const Conv2dShape& s, float* workspace);

}  // namespace ember::kernels::cpu
