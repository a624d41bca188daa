// Loops over several strided operands of one shape: the engine under every element-wise op,
// copy and reduction on the CPU.
// defines: ember::kernels::cpu::StridedLoop, for_each_strided
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace ember::kernels::cpu {

// N operands viewed over one shape; strides in elements, 0 for a broadcast dim.
template <size_t N>
struct StridedLoop {
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
};

// Merges adjacent dims that every operand walks contiguously with respect to each other, and
// drops size-1 dims, so that a contiguous tensor becomes one flat run. Keeps dim order.
template <size_t N>
StridedLoop<N> coalesce(const StridedLoop<N>& loop) {
  StridedLoop<N> out;
  for (size_t d = 0; d < loop.sizes.size(); ++d) {
    if (loop.sizes[d] == 1) continue;
    bool merge = !out.sizes.empty();
    for (size_t k = 0; merge && k < N; ++k) {
      merge = out.strides[k].back() == loop.strides[k][d] * loop.sizes[d];
    }
    if (merge) {
      out.sizes.back() *= loop.sizes[d];
      for (size_t k = 0; k < N; ++k) out.strides[k].back() = loop.strides[k][d];
    } else {
      out.sizes.push_back(loop.sizes[d]);
      for (size_t k = 0; k < N; ++k) out.strides[k].push_back(loop.strides[k][d]);
    }
  }
  return out;
}

// Calls run(offsets, count, steps) once per innermost run: the run's `count` elements of operand
// k sit at offsets[k] + i * steps[k] for i in [0, count). Offsets are in elements. Does nothing
// when any size is 0; calls run once with count 1 for a 0-dim loop.
template <size_t N, class Run>
void for_each_strided(const StridedLoop<N>& shape_and_strides, Run&& run) {
  StridedLoop<N> loop = coalesce(shape_and_strides);
  for (int64_t size : shape_and_strides.sizes) {
    if (size == 0) return;
  }
  std::array<int64_t, N> offsets{};
  if (loop.sizes.empty()) {
    std::array<int64_t, N> steps{};
    run(offsets, int64_t{1}, steps);
    return;
  }
  const int64_t ndim = static_cast<int64_t>(loop.sizes.size());
  const int64_t inner = loop.sizes[ndim - 1];
  std::array<int64_t, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = loop.strides[k][ndim - 1];
  std::vector<int64_t> counter(ndim, 0);
  while (true) {
    run(offsets, inner, steps);
    int64_t d = ndim - 2;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets[k] += loop.strides[k][d];
      if (++counter[d] < loop.sizes[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= loop.strides[k][d] * loop.sizes[d];
      counter[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace ember::kernels::cpu
