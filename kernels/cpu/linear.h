// linear's two helpers around the GEMM: the bias copied into every output row, and the bias
// gradient as column sums. The twins of kernels/cuda/linear.h.
// defines: ember::kernels::cpu::broadcast_rows, column_sums
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// out[i, j] = row[j] for a contiguous out of [rows, cols] (linear's bias, before a beta = 1 GEMM).
template <class T>
void broadcast_rows(const T* row, int64_t rows, int64_t cols, T* out);

// out[j] = sum over i of x[i, j], x contiguous [rows, cols] (linear's bias gradient). rows == 0
// gives zeros. Deterministic: each column summed over rows in order.
template <class T>
void column_sums(const T* x, int64_t rows, int64_t cols, T* out);

}  // namespace ember::kernels::cpu
