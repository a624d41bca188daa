#include "ember/kernels/cpu/index.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Below this many elements a call stays on the calling thread (the fork costs more).
constexpr int64_t kParallelElements = 1 << 15;

int threads_for(int64_t elements, int64_t units) {
  if (elements < kParallelElements || omp_in_parallel()) return 1;
  return static_cast<int>(std::clamp<int64_t>(units, 1, get_num_threads()));
}

// index_select of single elements (inner == 1: along the last dim), typed by size rather than a
// memcpy call per element.
template <class U>
void select_elements(const U* from, const int64_t* index, U* to, const IndexShape& s, int threads) {
  parallel_ranges(s.outer * s.count, threads, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) to[p] = from[(p / s.count) * s.dim_size + index[p % s.count]];
  });
}

// gather over the index elements [begin, end), a run along the index's last dim at a time:
// coordinates counted along the index's shape, the input offset of the run's start kept up to
// date as they advance, so the inner loop is one load and one store per element.
template <class U>
void gather_range(const U* src, const int64_t* index, U* dst, const GatherShape& s, int64_t begin, int64_t end) {
  const int last = s.ndim - 1;
  int64_t coord[kMaxGatherDims] = {}, base = 0;  // base: the offset of the coordinates outside dim
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    coord[d] = rest % s.index_sizes[d];
    rest /= s.index_sizes[d];
    if (d != s.dim) base += coord[d] * s.input_strides[d];
  }
  const int64_t dim_stride = s.input_strides[s.dim];
  const int64_t last_stride = last == s.dim ? 0 : s.input_strides[last];
  for (int64_t e = begin; e < end;) {
    const int64_t run = std::min(end - e, s.index_sizes[last] - coord[last]);
    const U* row = src + base;
    for (int64_t j = 0; j < run; ++j) dst[e + j] = row[j * last_stride + index[e + j] * dim_stride];
    e += run;
    base -= coord[last] * last_stride;  // back to the run's row start, then on to the next row
    coord[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t step = d == s.dim ? 0 : s.input_strides[d];
      if (++coord[d] < s.index_sizes[d]) {
        base += step;
        break;
      }
      base -= step * (s.index_sizes[d] - 1);
      coord[d] = 0;
    }
  }
}

// gather_range for an index of one or two dims ([N, k] picks from [N, C] logits, the common
// case): the row's offset advances by one stride, no coordinates kept. With k = 1 the general
// loop's carry through coord[] in memory had cost 6 cycles an element.
template <class U>
void gather_rows(const U* src, const int64_t* index, U* dst, const GatherShape& s, int64_t begin, int64_t end) {
  const int last = s.ndim - 1;
  const int64_t cols = s.index_sizes[last];
  const int64_t row_stride = last == 1 && s.dim != 0 ? s.input_strides[0] : 0;
  const int64_t col_stride = last == s.dim ? 0 : s.input_strides[last];
  const int64_t dim_stride = s.input_strides[s.dim];
  for (int64_t r = begin / cols, e = begin; e < end; ++r) {
    const U* row = src + r * row_stride;
    const int64_t c_end = std::min(cols, end - r * cols);
    for (int64_t c = e - r * cols; c < c_end; ++c, ++e) dst[e] = row[c * col_stride + index[e] * dim_stride];
  }
}

template <class U>
void gather_typed(const void* src, const int64_t* index, void* dst, const GatherShape& s) {
  parallel_ranges(s.numel, threads_for(s.numel, s.numel), [&](int64_t begin, int64_t end) {
    const auto* from = static_cast<const U*>(src);
    auto* to = static_cast<U*>(dst);
    if (s.ndim <= 2) gather_rows(from, index, to, s, begin, end);
    else gather_range(from, index, to, s, begin, end);
  });
}

}  // namespace

void gather(const void* src, const int64_t* index, void* dst, size_t element_size, const GatherShape& s) {
  if (s.numel <= 0) return;
  switch (element_size) {
    case 1: return gather_typed<uint8_t>(src, index, dst, s);
    case 2: return gather_typed<uint16_t>(src, index, dst, s);
    case 4: return gather_typed<uint32_t>(src, index, dst, s);
    default: return gather_typed<uint64_t>(src, index, dst, s);
  }
}

void index_select(const void* src, const int64_t* index, void* dst, size_t element_size, const IndexShape& s) {
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(dst);
  const size_t run = static_cast<size_t>(s.inner) * element_size;  // one selected slice, contiguous
  const int64_t slices = s.outer * s.count;
  const int threads = threads_for(s.selected_numel(), slices);
  if (s.inner == 1 && element_size == 8) {
    return select_elements(static_cast<const uint64_t*>(src), index, static_cast<uint64_t*>(dst), s, threads);
  }
  if (s.inner == 1 && element_size == 4) {
    return select_elements(static_cast<const uint32_t*>(src), index, static_cast<uint32_t*>(dst), s, threads);
  }
  parallel_ranges(slices, threads, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t o = p / s.count, i = p % s.count;
      std::memcpy(to + static_cast<size_t>(p) * run, from + static_cast<size_t>(o * s.dim_size + index[i]) * run, run);
    }
  });
}

template <class T>
void index_add(const T* src, const int64_t* index, T* dst, int64_t skip_index, const IndexShape& s) {
  // Threads split the outer slices when there are enough of them, else the columns of inner;
  // either way each destination element gets its terms in index order.
  const bool by_outer = s.outer >= get_num_threads();
  const int64_t units = by_outer ? s.outer : s.inner;
  parallel_ranges(units, threads_for(s.selected_numel(), units), [&](int64_t begin, int64_t end) {
    const int64_t o_begin = by_outer ? begin : 0, o_end = by_outer ? end : s.outer;
    const int64_t k_begin = by_outer ? 0 : begin, k_end = by_outer ? s.inner : end;
    for (int64_t o = o_begin; o < o_end; ++o) {
      for (int64_t i = 0; i < s.count; ++i) {
        if (index[i] == skip_index) continue;
        const T* from = src + (o * s.count + i) * s.inner;
        T* to = dst + (o * s.dim_size + index[i]) * s.inner;
#pragma omp simd
        for (int64_t k = k_begin; k < k_end; ++k) to[k] += from[k];
      }
    }
  });
}

template void index_add<float>(const float*, const int64_t*, float*, int64_t, const IndexShape&);
template void index_add<double>(const double*, const int64_t*, double*, int64_t, const IndexShape&);

}  // namespace ember::kernels::cpu
