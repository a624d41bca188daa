// Internal to kernels/cuda/*.cu: how a kernel is launched (EMBER_LAUNCH), its dynamic shared
// memory (EMBER_DYNAMIC_SHARED), the grid of a grid-stride launch, and the IEEE special values
// device code needs.
// defines: EMBER_LAUNCH, EMBER_DYNAMIC_SHARED,
//          ember::kernels::cuda::detail::{grid_for, negative_infinity, quiet_nan}
//
// Note [Emulated launches]: the same .cu sources build for the GPU with nvcc and for ember's CUDA
// emulator with the host compiler (EMBER_CUDA_EMULATOR, kernels/cuda/emulator/). The two spellings
// nvcc alone understands are written through these macros:
//   EMBER_LAUNCH(grid, block, shared_bytes, stream, kernel<T>)(args...)
//     is kernel<T><<<grid, block, shared_bytes, stream>>>(args...) under nvcc; the kernel comes
//     last so that its template arguments may hold commas;
//   EMBER_DYNAMIC_SHARED(T, name);
//     is `extern __shared__ __align__(16) T name[]` under nvcc, and a T* to the block's dynamic
//     shared memory on the emulator.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_runtime.h>

#if defined(EMBER_CUDA_EMULATOR)
#define EMBER_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::ember::emu::make_launch(__VA_ARGS__, grid, block, shared_bytes, stream, #__VA_ARGS__, __FILE__, __LINE__)
#define EMBER_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::ember::emu::dynamic_shared_memory())
#else
#define EMBER_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<grid, block, shared_bytes, stream>>>
#define EMBER_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

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
