// ember's CUDA emulator: the part of the CUDA runtime API that the emulated kernels and their
// launchers use, with the toolkit's names, error codes and signatures. On this include path it
// stands in for the toolkit's header, so kernels/cuda/*.cu compile as host C++ with no CUDA
// toolkit installed. Calls are served by kernels/cuda/emulator/runtime.cpp.
// defines: cudaError_t (the codes ember checks), cudaStream_t, uint3, dim3, cudaGetLastError,
//          cudaPeekAtLastError, cudaGetErrorString, cudaGetErrorName, cudaDeviceSynchronize,
//          cudaStreamSynchronize
#pragma once

#include <cstddef>
#include <cstdint>

// The numbers are the toolkit's (driver_types.h), so a code printed here means what it means there.
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorHardwareStackError = 714,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorInvalidAddressSpace = 717,
  cudaErrorInvalidPc = 718,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorUnknown = 999,
};
using cudaError_t = cudaError;

struct CUstream_st;
using cudaStream_t = CUstream_st*;

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Per host thread, as in CUDA: the first error since the last call, then cleared.
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
// For a fault the emulator raised (a divergent barrier, a deadlock, a bad launch), the string
// of its code carries the details: kernel, launch site, barrier site, thread and block.
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
// Emulated kernels run to completion inside their launch, so these only report errors.
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
