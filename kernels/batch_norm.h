// The layout of batch normalisation, shared by its CPU (kernels/cpu/batch_norm.h) and CUDA
// (kernels/cuda/batch_norm.h) kernels.
// defines: ember::kernels::BatchNormShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// A contiguous input [batch, channels, spatial]: [N, C] has spatial 1, [N, C, L] spatial L and
// [N, C, H, W] spatial H * W. Statistics are per channel, over batch * spatial values.
struct BatchNormShape {
  int64_t batch = 0, channels = 0, spatial = 1;
  int64_t per_channel() const { return batch * spatial; }  // values per channel
  int64_t numel() const { return batch * channels * spatial; }
};

}  // namespace ember::kernels
