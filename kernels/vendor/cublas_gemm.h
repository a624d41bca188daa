// cuBLAS under the same GEMM signatures as kernels::cuda (kernels/cuda/gemm.h), so a caller picks
// either by ember::backend() with one pointer.
// defines: ember::kernels::vendor::gemm, gemm_batched
//
// Row-major C = alpha * op(A) * op(B) + beta * C is column-major C^T = op(B)^T * op(A)^T, so each
// call hands cuBLAS the operands swapped (B first) with the same transpose flags; no copies.
// FP32 stays FP32 (the handle keeps cuBLAS's default math mode: no TF32).
#pragma once

#include <cstdint>

#include "ember/kernels/stream.h"

namespace ember::kernels::vendor {

// Same contract as kernels::cuda::gemm; runs on the current device's per-thread handle bound to
// `stream`. Throws ember::Error when a size or leading dimension exceeds cuBLAS's 32-bit ints, or
// when cuBLAS fails.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, Stream stream);

// cublas{S,D}gemmStridedBatched (a stride of 0 broadcasts A or B over the batch).
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch, Stream stream);

}  // namespace ember::kernels::vendor
