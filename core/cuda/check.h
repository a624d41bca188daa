// Checks every CUDA runtime call: a failure throws ember::Error naming the call, the error
// string and file:line.
// defines: EMBER_CUDA_CHECK
#pragma once

#include <cuda_runtime_api.h>

#include "common/error.h"

#define EMBER_CUDA_CHECK(call)                                                                      \
  do {                                                                                              \
    cudaError_t ember_cuda_status = (call);                                                         \
    if (ember_cuda_status != cudaSuccess) {                                                         \
      throw ::ember::Error(::ember::detail::str("CUDA error: ", #call, " failed: ",                 \
                                                cudaGetErrorString(ember_cuda_status), " (", __FILE__, \
                                                ":", __LINE__, ")"));                               \
    }                                                                                               \
  } while (0)
