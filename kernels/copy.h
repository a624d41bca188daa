// What the CPU and CUDA copy kernels share: a strided layout of a fixed number of dims.
// defines: ember::kernels::{kMaxDims, StridedLayout}
#pragma once

#include <cstdint>

#include "ember/kernels/elementwise.h"

namespace ember::kernels {

// The most dims a StridedLayout holds, and the most a CUDA kernel takes, counted after merging
// the dims that every operand walks contiguously (so a contiguous tensor of any rank counts as one).
inline constexpr int kMaxDims = 8;

// Sizes and strides in elements, outermost first. Broadcast source dims have stride 0.
struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

}  // namespace ember::kernels
