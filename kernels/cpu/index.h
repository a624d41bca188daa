// index_select and its backward on the CPU (kernels/index.h).
// defines: ember::kernels::cpu::index_select, index_add, gather
//
// Indices are trusted here (the op checks them). index_select moves elements of any dtype by
// their size; index_add sums floating gradients, each destination element receiving its terms
// in index order whatever the thread count, so repeated indices give the same bits every run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ember/kernels/index.h"

namespace ember::kernels::cpu {

// dst[o, i, k] = src[o, index[i], k], for elements of `element_size` bytes (1, 2, 4 or 8).
void index_select(const void* src, const int64_t* index, void* dst, size_t element_size, const IndexShape& s);

// dst[o, index[i], k] += src[o, i, k] for every i whose index is not `skip_index` (-1: none),
// into dst [outer, dim_size, inner] as given (the caller zeroes it for a gradient).
template <class T>
void index_add(const T* src, const int64_t* index, T* dst, int64_t skip_index, const IndexShape& s);

// dst[e] = src[the input offset of index element e] (kernels/index.h's GatherShape), for elements
// of `element_size` bytes (1, 2, 4 or 8).
void gather(const void* src, const int64_t* index, void* dst, size_t element_size, const GatherShape& s);

}  // namespace ember::kernels::cpu
