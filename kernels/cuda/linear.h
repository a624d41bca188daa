// linear's two helpers around the GEMM on one CUDA device: the bias copied into every output row,
// and the bias gradient as column sums. The twins of kernels/cpu/linear.h.
// defines: ember::kernels::cuda::broadcast_rows, column_sums
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// Device pointers on the stream's device; T is float or double. Launches asynchronously on `stream`.

// out[i, j] = row[j] for a contiguous out of [rows, cols] (linear's bias, before a beta = 1 GEMM).
template <class T>
void broadcast_rows(const T* row, int64_t rows, int64_t cols, T* out, Stream stream);

// out[j] = sum over i of x[i, j], x contiguous [rows, cols] (linear's bias gradient). rows == 0
// gives zeros. Deterministic: a fixed summation order.
template <class T>
void column_sums(const T* x, int64_t rows, int64_t cols, T* out, Stream stream);

}  // namespace ember::kernels::cuda
