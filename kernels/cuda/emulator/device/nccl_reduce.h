// ember's emulated NCCL: the element types and reduction operators that its transport knows, and
// the element-wise arithmetic of a reduction. Independent of nccl.h, so that the transport and its
// test build without any CUDA header; nccl_collectives.cpp maps ncclDataType_t / ncclRedOp_t here.
// defines: ember::emu::nccl::{Scalar, Reduction, scalar_bytes, scalar_name, reduction_name,
//          combine, finish_average}
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::emu::nccl {

enum class Scalar : uint32_t { int8, uint8, int32, uint32, int64, uint64, float32, float64 };
enum class Reduction : uint32_t { sum, prod, max, min, avg };

size_t scalar_bytes(Scalar scalar);
const char* scalar_name(Scalar scalar);        // "float32"
const char* reduction_name(Reduction reduction);  // "sum"

// acc[i] = acc[i] (op) in[i] for i < count, in the arithmetic of `scalar` (integers wrap around
// on overflow, as on a GPU). `avg` combines as `sum`; finish_average divides at the end. Every rank
// calls this over the ranks' inputs in rank order, so every rank rounds the same way.
void combine(void* acc, const void* in, size_t count, Scalar scalar, Reduction reduction);

// acc[i] = acc[i] / nranks: the last step of ncclAvg (integers divide truncating).
void finish_average(void* acc, size_t count, Scalar scalar, int nranks);

}  // namespace ember::emu::nccl
