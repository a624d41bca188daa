// Checks for cuBLAS and cuDNN calls: a failure throws ember::Error naming the call, the library's
// status string and file:line.
// defines: EMBER_CUBLAS_CHECK, EMBER_CUDNN_CHECK
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include "ember/common/error.h"

#define EMBER_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                           \
    cublasStatus_t ember_cublas_status = (call);                                                 \
    if (ember_cublas_status != CUBLAS_STATUS_SUCCESS) {                                          \
      throw ::ember::Error(::ember::detail::str("cuBLAS error: ", #call, " failed: ",            \
                                                cublasGetStatusString(ember_cublas_status), " (", \
                                                __FILE__, ":", __LINE__, ")"));                  \
    }                                                                                            \
  } while (0)

#define EMBER_CUDNN_CHECK(call)                                                                  \
  do {                                                                                           \
    cudnnStatus_t ember_cudnn_status = (call);                                                   \
    if (ember_cudnn_status != CUDNN_STATUS_SUCCESS) {                                            \
      throw ::ember::Error(::ember::detail::str("cuDNN error: ", #call, " failed: ",             \
                                                cudnnGetErrorString(ember_cudnn_status), " (",   \
                                                __FILE__, ":", __LINE__, ")"));                  \
    }                                                                                            \
  } while (0)
