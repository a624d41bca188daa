// The layout of layer normalisation, shared by its CPU (kernels/cpu/layer_norm.h) and CUDA
// (kernels/cuda/layer_norm.h) kernels.
// defines: ember::kernels::LayerNormShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// A contiguous input seen as [rows, cols]: cols is the product of normalized_shape (the last
// dims), rows the product of the leading ones. Statistics are per row; weight and bias are [cols].
struct LayerNormShape {
  int64_t rows = 0, cols = 0;
  int64_t numel() const { return rows * cols; }
};

}  // namespace ember::kernels
