// The layout of index_select and its backward, shared by the CPU (kernels/cpu/index.h) and CUDA
// (kernels/cuda/index.h) kernels.
// defines: ember::kernels::IndexShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// A contiguous source [outer, dim_size, inner] and `count` int64 indices into its middle dim,
// each in [0, dim_size); the selection is [outer, count, inner].
struct IndexShape {
  int64_t outer = 1, dim_size = 0, inner = 1, count = 0;
  int64_t selected_numel() const { return outer * count * inner; }
};

}  // namespace ember::kernels
