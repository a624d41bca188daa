// Strided copy with dtype cast, and fill, on the CPU.
#include "ember/kernels/cpu/copy.h"

#include <cstring>
#include <type_traits>

#include "ember/common/error.h"
#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {

namespace {

// src converted as the CUDA kernels convert (kernels/cuda/strided.cuh's convert): floating to an
// integer through int64, so -1.0 becomes 255 in uint8 on every host.
template <class D, class S>
inline D convert(S value) {
  if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    return static_cast<D>(static_cast<int64_t>(value));
  } else {
    return static_cast<D>(value);
  }
}

template <class D, class S>
void run_copy(D* out, const S* in, bool to_bool, const StridedLoop<2>& loop) {
  for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
    D* o = out + off[0];
    const S* i = in + off[1];
    if (to_bool) {
      for (int64_t k = 0; k < n; ++k) o[k * step[0]] = static_cast<D>(i[k * step[1]] != S(0));
    } else if (step[0] == 1 && step[1] == 1) {
      for (int64_t k = 0; k < n; ++k) o[k] = convert<D, S>(i[k]);
    } else {
      for (int64_t k = 0; k < n; ++k) o[k * step[0]] = convert<D, S>(i[k * step[1]]);
    }
  });
}

}  // namespace

// Rows split between threads when there are at least 1 MB of them to copy.
void concat_blocks(void* dst, const void* const* srcs, const size_t* block_bytes, size_t count, int64_t rows) {
  size_t row_bytes = 0;
  for (size_t i = 0; i < count; ++i) row_bytes += block_bytes[i];
  auto copy_rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      char* out = static_cast<char*>(dst) + static_cast<size_t>(r) * row_bytes;
      for (size_t i = 0; i < count; ++i) {
        if (block_bytes[i] == 0) continue;
        const char* from = static_cast<const char*>(srcs[i]) + static_cast<size_t>(r) * block_bytes[i];
        std::memcpy(out, from, block_bytes[i]);
        out += block_bytes[i];
      }
    }
  };
  const bool large = row_bytes * static_cast<size_t>(rows) >= (size_t(1) << 20);
  const int threads = large && !omp_in_parallel() ? int(std::min<int64_t>(get_num_threads(), rows)) : 1;
  parallel_ranges(rows, threads, copy_rows);
}

void copy_cast(void* dst, int dst_dtype, const void* src, int src_dtype, const StridedLoop<2>& loop) {
  const bool to_bool = dst_dtype == kDTypeBool;
  dispatch_dtype(dst_dtype, "copy_", [&](auto d) {
    using D = decltype(d);
    dispatch_dtype(src_dtype, "copy_", [&](auto s) {
      using S = decltype(s);
      run_copy<D, S>(static_cast<D*>(dst), static_cast<const S*>(src), to_bool, loop);
    });
  });
}

void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel) {
  if (numel == 0) return;
  EMBER_CHECK(src_layout.ndim == dst_layout.ndim, "copy_strided: source has ", src_layout.ndim,
              " dims, destination ", dst_layout.ndim);
  StridedLoop<2> loop;
  loop.sizes.assign(dst_layout.sizes, dst_layout.sizes + dst_layout.ndim);
  loop.strides[0].assign(dst_layout.strides, dst_layout.strides + dst_layout.ndim);
  loop.strides[1].assign(src_layout.strides, src_layout.strides + src_layout.ndim);
  copy_cast(dst, dst_dtype, src, src_dtype, loop);
}

// Below this many bytes a fill stays on the calling thread (the fork costs more than the stores).
constexpr int64_t kParallelFillBytes = 256 << 10;

void fill(void* dst, int dtype, int64_t numel, double value) {
  const bool to_bool = dtype == kDTypeBool;
  dispatch_dtype(dtype, "fill_", [&](auto t) {
    using T = decltype(t);
    const T v = to_bool ? static_cast<T>(value != 0.0) : static_cast<T>(value);
    const T zero{};
    // Zeros (the usual fill: every gradient buffer starts as one) go through memset, whose
    // streaming stores write a large buffer without first reading it; +0.0 only, since -0.0 has
    // a bit set. Threads fill their own contiguous part.
    const bool all_zero_bits = std::memcmp(&v, &zero, sizeof(T)) == 0;
    const bool parallel = numel * int64_t{sizeof(T)} >= kParallelFillBytes && !omp_in_parallel();
    T* out = static_cast<T*>(dst);
    parallel_ranges(numel, parallel ? get_num_threads() : 1, [&](int64_t begin, int64_t end) {
      if (all_zero_bits) {
        std::memset(out + begin, 0, static_cast<size_t>(end - begin) * sizeof(T));
      } else {
        for (int64_t k = begin; k < end; ++k) out[k] = v;
      }
    });
  });
}

}  // namespace ember::kernels::cpu
