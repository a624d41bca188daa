// Copies and casts between strided layouts on one CUDA device, and fill.
// defines: ember::kernels::cuda::{kMaxDims, kDType*, StridedLayout, copy_cast, copy_strided, fill}
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

#include "ember/kernels/cpu/elementwise.h"

namespace ember::kernels::cuda {

// The most dims a CUDA kernel takes, counted after merging the dims that every operand walks
// contiguously (so a contiguous tensor of any rank counts as one).
inline constexpr int kMaxDims = 8;

// Element codes shared with core's DType: static_cast<int>(DType) gives them.
inline constexpr int kDTypeFloat32 = 0;
inline constexpr int kDTypeFloat64 = 1;
inline constexpr int kDTypeInt64 = 2;
inline constexpr int kDTypeUInt8 = 3;
inline constexpr int kDTypeBool = 4;

// Sizes and strides in elements, outermost first. Broadcast source dims have stride 0.
struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// dst[i] = cast(src[i]) over `loop` (operand 0 dst, operand 1 src, strides in elements, 0 for a
// broadcast dim). Casts as the CPU copy does: to bool as `src != 0`. Requires both pointers on the
// stream's device and the loop to merge to at most kMaxDims dims (throws ember::Error naming copy_
// otherwise). Launches asynchronously on `stream`; does nothing for an empty loop.
void copy_cast(void* dst, int dst_dtype, const void* src, int src_dtype, const cpu::StridedLoop<2>& loop,
               Stream stream);

// The same over two StridedLayouts of the same sizes (`numel` elements).
void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel, Stream stream);

// Sets every element of a contiguous buffer of `numel` elements of `dtype` to `value`, converted
// as a host static_cast<T>(value) does (bool: value != 0).
void fill(void* dst, int dtype, int64_t numel, double value, Stream stream);

}  // namespace ember::kernels::cuda
