// General matrix product on row-major matrices, the engine under matmul, linear and conv2d.
// defines: ember::kernels::cpu::gemm, gemm_batched
#pragma once

#include <cstdint>

namespace ember::kernels::cpu {

// C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) = X, or X^T when trans_x.
// op(A) is M x K, op(B) is K x N, C is M x N.
// Requires: M, N, K >= 0; lda >= (trans_a ? M : K), ldb >= (trans_b ? K : N), ldc >= N (each >= 1);
//   C does not overlap A or B.
// Guarantees: beta == 0 writes C without reading it (old NaNs vanish); K == 0 gives C = beta * C;
//   each C element is summed over k in a fixed order, so the result is bit-for-bit reproducible;
//   the float path gives the same bits for every get_num_threads(). Runs on get_num_threads()
//   threads when the product is large enough, and on the calling thread alone when called inside
//   an OpenMP parallel region.
// Throws: OutOfMemory when a packing buffer cannot be allocated (inside a caller's parallel
//   region that would end the program, as any exception there does).
// float: packed, cache-blocked, AVX-512 or AVX2/FMA micro-kernel picked at run time (scalar
//   fallback); A * B^T with N <= 16, K >= 128 and at most 4 MFLOP (the linear forward) runs as dot
//   products on the operands in place instead (AVX-512). Note: its packing buffers belong to the
//   calling thread, grown once and reused, never freed before the thread exits (at most
//   (MC + NC) * KC floats, about 1.8 MB, plus the threads' A slices).
// double: a plain blocked loop, meant for float64 gradient checks.
template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// `batch` independent products, as kernels::cuda::gemm_batched: matrix i of X starts at
// X + i * stride_x. stride_a or stride_b may be 0 (one matrix broadcast over the batch); C's
// matrices must not overlap each other. Runs the products one after another, each as gemm().
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch);

}  // namespace ember::kernels::cpu
