// Hand-written general matrix products on row-major matrices in CUDA device memory, the engine
// under matmul and linear (linear's bias helpers are in kernels/cuda/linear.h).
// defines: ember::kernels::cuda::gemm, gemm_batched
//
// Same contract as kernels::cpu::gemm, with a stream: C = alpha * op(A) * op(B) + beta * C, all
// row-major; op(X) = X, or X^T when trans_x (a transposed view reaches the kernel without a copy).
// op(A) is M x K, op(B) is K x N, C is M x N.
//   float32: 128x128x8 block tiles, 8x8 outputs per thread, double-buffered shared memory,
//            16-byte loads and stores when the pointer is 16-byte aligned and ld (and the batch
//            stride) is a multiple of 4 (checked at run time; scalar otherwise).
//   float64: a plain 64x64x8 tiled kernel.
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::cuda {

// Requires: M, N, K >= 0; lda >= (trans_a ? M : K), ldb >= (trans_b ? K : N), ldc >= N (each >= 1);
//   every pointer on the stream's device; C does not overlap A or B.
// Guarantees: beta == 0 writes C without reading it (old NaNs vanish); K == 0 gives C = beta * C;
//   deterministic (each element summed over k in order). Launches asynchronously on `stream`.
// Throws ember::Error when N exceeds 65535 tiles of columns (the grid's y limit): 65535 * 128
//   columns in float32, 65535 * 64 in float64.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, Stream stream);

// `batch` independent products: matrix i of X starts at X + i * stride_x. stride_a or stride_b
// may be 0 (one matrix broadcast over the batch); C's matrices must not overlap each other.
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch, Stream stream);

}  // namespace ember::kernels::cuda
