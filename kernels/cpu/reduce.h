// Reductions on the CPU: sum, and max / min with the index of the winner.
// defines: ember::kernels::cpu::{sum, extremum}
//
// The CPU twins of kernels/cuda/reduce.h: the same entry points over the same ReduceLoop
// (kernels/reduce.h), without a stream or a workspace (they need none), on the calling thread. Float sums accumulate each
// innermost run in double, integer sums in int64, as on CUDA; the dtype switches run once per
// call, outside the element loops.
#pragma once

#include <cstdint>

#include "ember/kernels/reduce.h"

namespace ember::kernels::cpu {

// out[o] = sum over r (out contiguous over loop.kept). in_dtype float32 / float64 give out_dtype
// of the same type; int64, uint8 and bool give int64 (out_dtype must say so; throws ember::Error
// otherwise). A reduced range of 0 elements gives 0.
void sum(void* out, int out_dtype, const void* in, int in_dtype, const ReduceLoop& loop);

// values[o] = the max (min when !take_max) over r and indices[o] = its r: the first r on ties,
// and the first NaN wins over every number. Requires a non-empty reduced range (throws
// ember::Error otherwise). values has `dtype`, indices are int64, both contiguous over loop.kept.
void extremum(bool take_max, void* values, int64_t* indices, const void* in, int dtype, const ReduceLoop& loop);

}  // namespace ember::kernels::cpu
