// One cuBLAS and one cuDNN handle per (thread, device), bound to the stream of each call.
// defines: ember::kernels::vendor::cublas_handle, cudnn_handle
//
// Handles are expensive to create and not safe to share between threads, so each thread keeps its
// own per device, created on first use on that device (the caller has made it current).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace ember::kernels::vendor {

cublasHandle_t cublas_handle(int device, cudaStream_t stream);
cudnnHandle_t cudnn_handle(int device, cudaStream_t stream);

}  // namespace ember::kernels::vendor
