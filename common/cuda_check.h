// Checks for CUDA runtime calls and kernel launches, shared by kernels/, core/ and parallel/: a
// failure throws ember::Error naming the call (or the op that launched the kernel), the error
// string and file:line.
// defines: EMBER_CUDA_CHECK, EMBER_CUDA_LAUNCH_CHECK
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

// Put right after a <<<...>>> launch: a bad configuration (too many threads, too much shared
// memory) fails here, naming `op`. Faults inside the kernel surface at the next synchronisation.
#define EMBER_CUDA_LAUNCH_CHECK(op)                                                                 \
  do {                                                                                              \
    cudaError_t ember_cuda_status = cudaGetLastError();                                             \
    if (ember_cuda_status != cudaSuccess) {                                                         \
      throw ::ember::Error(::ember::detail::str(op, ": CUDA kernel launch failed: ",                \
                                                cudaGetErrorString(ember_cuda_status), " (", __FILE__, \
                                                ":", __LINE__, ")"));                               \
    }                                                                                               \
  } while (0)
