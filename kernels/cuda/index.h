// index_select and its backward on one CUDA device: the twins of kernels/cpu/index.h, with the
// same arguments plus a trailing stream.
// defines: ember::kernels::cuda::index_select, index_add, gather
//
// Requires device pointers on the stream's device; launches asynchronously on `stream`.
// index_select is a grid-stride pass over the selection. index_add gives each destination
// column (o, k) one thread, which walks the indices in order: no atomics, and the same sums in
// the same order as the CPU's, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/index.h"
#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// As kernels::cpu::index_select.
void index_select(const void* src, const int64_t* index, void* dst, size_t element_size, const IndexShape& s,
                  Stream stream);

// As kernels::cpu::index_add.
template <class T>
void index_add(const T* src, const int64_t* index, T* dst, int64_t skip_index, const IndexShape& s, Stream stream);

// As kernels::cpu::gather: a grid-stride pass over the index.
void gather(const void* src, const int64_t* index, void* dst, size_t element_size, const GatherShape& s,
            Stream stream);

}  // namespace ember::kernels::cuda
