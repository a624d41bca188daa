// Reductions on one CUDA device: sum, and max / min with the index of the winner.
// defines: ember::kernels::cuda::{sum_workspace_bytes, sum, extremum_workspace_bytes, extremum}
// (the CUDA twins of kernels/cpu/reduce.h, over kernels/reduce.h's ReduceLoop)
//
// Note [Deterministic reductions]: each output element is reduced by one block's threads (no
// atomics): thread (tx, ty) folds every by-th element of its output's range, then a fixed tree in
// shared memory folds the by partial results. When there are too few outputs to fill the GPU,
// the reduced range is split into chunks that separate blocks fold into a workspace, and a second
// launch folds the chunks. The launch shape depends only on the sizes and strides, so the same
// input gives the same bits on every run. Float sums accumulate in double, integer sums in int64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/stream.h"

#include "ember/kernels/elementwise.h"
#include "ember/kernels/reduce.h"

namespace ember::kernels::cuda {

// Bytes of device workspace sum() needs for this loop; 0 when it needs none.
size_t sum_workspace_bytes(const ReduceLoop& loop);

// out[o] = sum over r. in_dtype float32 / float64 give out_dtype of the same type; int64, uint8
// and bool give int64 (out_dtype must say so). A reduced range of 0 elements gives 0. `workspace`
// holds at least sum_workspace_bytes(loop) bytes on the device (may be null when that is 0).
void sum(void* out, int out_dtype, const void* in, int in_dtype, const ReduceLoop& loop, void* workspace,
         size_t workspace_bytes, Stream stream);

// Bytes of device workspace extremum() needs for this loop and dtype; 0 when it needs none.
size_t extremum_workspace_bytes(const ReduceLoop& loop, int dtype);

// values[o] = the max (min when !take_max) over r and indices[o] = its r, as the CPU kernel: the
// first r on ties, and the first NaN wins over every number. Requires a non-empty reduced range.
// values has `dtype` (float32, float64, int64, uint8 or bool), indices are int64, both contiguous.
void extremum(bool take_max, void* values, int64_t* indices, const void* in, int dtype, const ReduceLoop& loop,
              void* workspace, size_t workspace_bytes, Stream stream);

}  // namespace ember::kernels::cuda
