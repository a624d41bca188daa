// The layout of index_select and its backward, shared by the CPU (kernels/cpu/index.h) and CUDA
// (kernels/cuda/index.h) kernels.
// defines: ember::kernels::IndexShape, GatherShape, kMaxGatherDims
#pragma once

#include <cstdint>

namespace ember::kernels {

// A contiguous source [outer, dim_size, inner] and `count` int64 indices into its middle dim,
// each in [0, dim_size); the selection is [outer, count, inner].
struct IndexShape {
  int64_t outer = 1, dim_size = 0, inner = 1, count = 0;
  int64_t selected_numel() const { return outer * count * inner; }
};

// gather's layout: an int64 index (contiguous) of up to kMaxGatherDims dims, each element naming
// a position along `dim` of a contiguous input of the same rank, whose other coordinates are the
// element's own: out[i][j] = input[index[i][j]][j] for dim 0. The output has the index's shape.
inline constexpr int kMaxGatherDims = 8;
struct GatherShape {
  int ndim = 0, dim = 0;
  int64_t index_sizes[kMaxGatherDims] = {};    // the index's and the output's sizes
  int64_t input_strides[kMaxGatherDims] = {};  // the contiguous input's strides, in elements
  int64_t numel = 0;                           // of the index
};

}  // namespace ember::kernels
