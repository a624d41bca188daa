// Copies and casts between strided layouts on the CPU, and fill.
// defines: ember::kernels::cpu::{copy_cast, copy_strided, concat_blocks, fill}
//
// The CPU twins of kernels/cuda/copy.h: the same entry points without a stream, on the calling
// thread. Dtypes are kernels/elementwise.h's codes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/copy.h"
#include "ember/kernels/elementwise.h"

namespace ember::kernels::cpu {

// dst[i] = cast(src[i]) over `loop` (operand 0 dst, operand 1 src, strides in elements, 0 for a
// broadcast dim). Casts as the CUDA copy does: to bool as `src != 0`, floating to an integer
// through int64. Does nothing for an empty loop.
void copy_cast(void* dst, int dst_dtype, const void* src, int src_dtype, const StridedLoop<2>& loop);

// The same over two StridedLayouts of the same sizes (`numel` elements).
void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel);

// Concatenation of contiguous buffers of one dtype: for each of `rows` rows, the next
// block_bytes[i] bytes of each srcs[i] in turn, written one after another to dst (each row of dst
// is the sum of block_bytes). Rows are split between threads from 1 MB up.
void concat_blocks(void* dst, const void* const* srcs, const size_t* block_bytes, size_t count, int64_t rows);

// Sets every element of a contiguous buffer of `numel` elements of `dtype` to `value`, converted
// as static_cast<T>(value) does (bool: value != 0).
void fill(void* dst, int dtype, int64_t numel, double value);

}  // namespace ember::kernels::cpu
