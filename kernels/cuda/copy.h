// Copies and casts between strided layouts on one CUDA device, and fill.
// defines: ember::kernels::cuda::{copy_cast, copy_strided, fill}
//
// The CUDA twins of kernels/cpu/copy.h, over kernels/copy.h's layout and kernels/elementwise.h's
// dtype codes.
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

#include "ember/kernels/copy.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels::cuda {

// dst[i] = cast(src[i]) over `loop` (operand 0 dst, operand 1 src, strides in elements, 0 for a
// broadcast dim). Casts as the CPU copy does: to bool as `src != 0`. Requires both pointers on the
// stream's device and the loop to merge to at most kMaxDims dims (throws ember::Error naming copy_
// otherwise). Launches asynchronously on `stream`; does nothing for an empty loop.
void copy_cast(void* dst, int dst_dtype, const void* src, int src_dtype, const StridedLoop<2>& loop,
               Stream stream);

// The same over two StridedLayouts of the same sizes (`numel` elements).
void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel, Stream stream);

// Sets every element of a contiguous buffer of `numel` elements of `dtype` to `value`, converted
// as a host static_cast<T>(value) does (bool: value != 0).
void fill(void* dst, int dtype, int64_t numel, double value, Stream stream);

}  // namespace ember::kernels::cuda
