// Internal to kernels/cuda/*.cu: the grid of a grid-stride launch, and the IEEE special values
// device code needs.
// defines: ember::kernels::cuda::detail::{grid_for, negative_infinity, quiet_nan}
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

namespace ember::kernels::cuda::detail {

// Blocks of `per_block` work items each for `work` items: at least 1 (an empty launch is a
// no-op, not an invalid configuration) and at most `max_blocks`; the kernels loop grid-stride
// over whatever the capped grid does not cover.
inline unsigned grid_for(int64_t work, int64_t per_block, int64_t max_blocks) {
  return static_cast<unsigned>(std::clamp<int64_t>((work + per_block - 1) / per_block, 1, max_blocks));
}

template <class T>
__device__ __forceinline__ T negative_infinity();
template <>
__device__ __forceinline__ float negative_infinity<float>() { return -__int_as_float(0x7f800000); }
template <>
__device__ __forceinline__ double negative_infinity<double>() { return -__longlong_as_double(0x7ff0000000000000LL); }

template <class T>
__device__ __forceinline__ T quiet_nan();
template <>
__device__ __forceinline__ float quiet_nan<float>() { return __int_as_float(0x7fc00000); }
template <>
__device__ __forceinline__ double quiet_nan<double>() { return __longlong_as_double(0x7ff8000000000000LL); }

}  // namespace ember::kernels::cuda::detail
