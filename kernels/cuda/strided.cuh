// Internal to kernels/cuda/*.cu: strided layouts packed for a kernel, element offsets on the
// device, the grid-stride launch of an element-wise functor, and the dtype switch.
// defines: ember::kernels::cuda::detail::{Layout, pack, offsets_of, launch_elementwise, convert,
//          grid_for, kThreads} (the dtype switch is kernels/elementwise.h's dispatch_dtype)
//
// Note [Element-wise launch]: the host merges dims that every operand walks contiguously
// (kernels/elementwise.h's coalesce), so a contiguous tensor, or a contiguous tensor against a
// broadcast scalar, becomes one flat run of `n` elements that the flat kernel walks as
// `i * step[k]` with no division. Anything else runs the strided kernel, which turns each linear
// index into per-operand offsets (one div/mod per dim; in 32 bits when n < 2^31). Offsets are
// always 64-bit. Both kernels loop grid-stride, so any n runs on a capped grid.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "ember/common/cuda_check.h"
#include "ember/common/error.h"
#include "ember/kernels/copy.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda::detail {

inline constexpr int kThreads = 256;

// N operands over one shape of `ndim` dims (outermost first), strides in elements.
template <int N>
struct Layout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

// Coalesces `loop` and packs it for a kernel; throws naming `op` when more than kMaxDims dims
// remain. Requires every size > 0 (callers return early on an empty loop).
template <int N>
Layout<N> pack(const StridedLoop<N>& loop, const char* op) {
  StridedLoop<N> merged = coalesce(loop);
  const int ndim = static_cast<int>(merged.sizes.size());
  EMBER_CHECK(ndim <= kMaxDims, op, ": CUDA kernels take up to ", kMaxDims,
              " dims after merging the contiguous ones, got ", ndim, " (shape ", loop.sizes, ")");
  Layout<N> layout;
  layout.ndim = ndim;
  for (int d = 0; d < ndim; ++d) {
    layout.sizes[d] = merged.sizes[d];
    for (int k = 0; k < N; ++k) layout.strides[k][d] = merged.strides[k][d];
  }
  return layout;
}

// Blocks of kThreads for n elements, capped (the kernels loop grid-stride).
inline unsigned grid_for(int64_t n) { return grid_for(n, kThreads, 8192); }

// off[k] = offset in elements of the element with row-major linear index `index` in operand k.
// `I` is the type the div/mod run in (uint32_t when every index fits, else int64_t).
template <class I, int N>
__device__ __forceinline__ void offsets_of(const Layout<N>& layout, I index, int64_t (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = layout.ndim - 1; d > 0; --d) {
    const I size = static_cast<I>(layout.sizes[d]);
    const I i = index % size;
    index /= size;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * layout.strides[k][d];
  }
  if (layout.ndim > 0) {  // the outermost dim needs no modulo: index < sizes[0] here
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(index) * layout.strides[k][0];
  }
}

template <int N>
struct Steps {
  int64_t step[N];
};

// One flat run: operand k's element i sits at i * steps.step[k]. fn(off) computes the output.
template <int N, class O, class Fn>
__global__ void flat_kernel(O* out, Fn fn, Steps<N> steps, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[N];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i * steps.step[k];
    out[off[0]] = fn(off);
  }
}

template <class I, int N, class O, class Fn>
__global__ void strided_kernel(O* out, Fn fn, Layout<N> layout, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[N];
    offsets_of<I, N>(layout, static_cast<I>(i), off);
    out[off[0]] = fn(off);
  }
}

// out[off[0]] = fn(off) for every element of `loop` (operand 0 is the output; Note [Element-wise
// launch]). fn is a device functor taking `const int64_t (&)[N]` and holding its input pointers.
template <int N, class O, class Fn>
void launch_elementwise(O* out, const Fn& fn, const StridedLoop<N>& loop, cudaStream_t stream,
                        const char* op) {
  const int64_t n = numel_of(loop.sizes);
  if (n == 0) return;
  Layout<N> layout = pack<N>(loop, op);
  const unsigned blocks = grid_for(n);
  if (layout.ndim <= 1) {
    Steps<N> steps;
    for (int k = 0; k < N; ++k) steps.step[k] = layout.ndim == 0 ? 0 : layout.strides[k][0];
    EMBER_LAUNCH(blocks, kThreads, 0, stream, flat_kernel<N, O, Fn>)(out, fn, steps, n);
  } else if (n <= INT32_MAX) {
    EMBER_LAUNCH(blocks, kThreads, 0, stream, strided_kernel<uint32_t, N, O, Fn>)(out, fn, layout, n);
  } else {
    EMBER_LAUNCH(blocks, kThreads, 0, stream, strided_kernel<int64_t, N, O, Fn>)(out, fn, layout, n);
  }
  EMBER_CUDA_LAUNCH_CHECK(op);
}

// dst = src converted the way the CPU kernels convert: to bool as `src != 0`; floating to an
// integer through int64 (so -1.0 becomes 255 in uint8, as on x86 hosts).
template <class D, class S>
__device__ __forceinline__ D convert(S value, bool to_bool) {
  if (to_bool) return static_cast<D>(value != S(0));
  if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    return static_cast<D>(static_cast<int64_t>(value));
  } else {
    return static_cast<D>(value);
  }
}

}  // namespace ember::kernels::cuda::detail
