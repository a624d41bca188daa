// What the CPU and CUDA reductions share: the input seen as kept and reduced index spaces.
// defines: ember::kernels::ReduceLoop
#pragma once

#include "ember/kernels/elementwise.h"

namespace ember::kernels {

// The input of a reduction, seen as two index spaces over its strides (in elements). `kept`
// enumerates the output elements in row-major order: output element o (contiguous) folds the
// input elements at kept_offset(o) + reduced_offset(r) for r in [0, numel(reduced.sizes)), r in
// row-major order. An empty `sizes` is one element (offset 0).
struct ReduceLoop {
  StridedLoop<1> kept;
  StridedLoop<1> reduced;
};

}  // namespace ember::kernels
