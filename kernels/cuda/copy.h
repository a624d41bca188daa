// Copies and casts between strided layouts on one CUDA device.
// defines: ember::kernels::cuda::StridedLayout, copy_strided
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ember::kernels::cuda {

inline constexpr int kMaxDims = 8;

// Sizes and strides in elements, outermost first. Broadcast source dims have stride 0.
struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// Element codes shared with core's DType (0 float32, 1 float64, 2 int64, 3 uint8, 4 bool).
// dst[i] = cast(src[i]) for every logical index of `layout_shape` (dst and src share its sizes).
// Requires both pointers on the stream's device; launches asynchronously on `stream`.
void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel, cudaStream_t stream);

// Sets every element of a contiguous buffer of `numel` elements of `dtype` to `value`.
void fill(void* dst, int dtype, int64_t numel, double value, cudaStream_t stream);

}  // namespace ember::kernels::cuda
