// cuBLAS GEMM, row-major operands mapped onto column-major by swapping them.
#include "ember/kernels/vendor/cublas_gemm.h"

#include <climits>

#include "ember/common/cuda_check.h"
#include "ember/kernels/vendor/check.h"
#include "ember/kernels/vendor/handles.h"

namespace ember::kernels::vendor {

namespace {

int to_int(int64_t v, const char* what) {
  EMBER_CHECK(v >= 0 && v <= INT_MAX, "gemm (cuBLAS): ", what, " = ", v, " does not fit cuBLAS's 32-bit int");
  return static_cast<int>(v);
}

cublasHandle_t current_handle(cudaStream_t stream) {
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  return cublas_handle(device, stream);
}

cublasStatus_t call(cublasHandle_t h, cublasOperation_t ob, cublasOperation_t oa, int n, int m, int k,
                    const float* alpha, const float* B, int ldb, long long sb, const float* A, int lda,
                    long long sa, const float* beta, float* C, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasSgemm(h, ob, oa, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc);
  return cublasSgemmStridedBatched(h, ob, oa, n, m, k, alpha, B, ldb, sb, A, lda, sa, beta, C, ldc, sc, batch);
}

cublasStatus_t call(cublasHandle_t h, cublasOperation_t ob, cublasOperation_t oa, int n, int m, int k,
                    const double* alpha, const double* B, int ldb, long long sb, const double* A, int lda,
                    long long sa, const double* beta, double* C, int ldc, long long sc, int batch) {
  if (batch == 1) return cublasDgemm(h, ob, oa, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc);
  return cublasDgemmStridedBatched(h, ob, oa, n, m, k, alpha, B, ldb, sb, A, lda, sa, beta, C, ldc, sc, batch);
}

}  // namespace

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch, cudaStream_t stream) {
  EMBER_CHECK(M >= 0 && N >= 0 && K >= 0 && batch >= 0, "gemm (cuBLAS): sizes must be non-negative, got M=",
              M, " N=", N, " K=", K, " batch=", batch);
  if (M == 0 || N == 0 || batch == 0) return;
  const int m = to_int(M, "M"), n = to_int(N, "N"), k = to_int(K, "K");
  const int la = to_int(lda, "lda"), lb = to_int(ldb, "ldb"), lc = to_int(ldc, "ldc");
  const int count = to_int(batch, "batch");
  const cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t handle = current_handle(stream);
  EMBER_CUBLAS_CHECK(call(handle, ob, oa, n, m, k, &alpha, B, lb, stride_b, A, la, stride_a, &beta, C, lc,
                          stride_c, count));
}

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, cudaStream_t stream) {
  gemm_batched<T>(trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t, cudaStream_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, cudaStream_t);
template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  int64_t, const float*, int64_t, int64_t, float, float*, int64_t,
                                  int64_t, int64_t, cudaStream_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                   int64_t, const double*, int64_t, int64_t, double, double*, int64_t,
                                   int64_t, int64_t, cudaStream_t);

}  // namespace ember::kernels::vendor
