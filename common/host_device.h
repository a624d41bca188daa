// Marks a function for both the host and a CUDA device, so that one definition serves the CPU
// kernels and their CUDA twins (nvcc; ember's emulator defines __host__ __device__ as nothing).
// defines: EMBER_HOST_DEVICE
#pragma once

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif
