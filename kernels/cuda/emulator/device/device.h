// ember's emulated CUDA device (EMBER_CUDA=EMULATED, docs/cuda.md "The emulated device"): the
// internals that the emulated runtime (runtime_api.cpp) and the emulated NCCL (nccl.cpp) share.
// defines: ember::emu::device::{device_count, current_device, device_of, stream_device,
//          enqueue, DeviceError}
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace ember::emu::device {

// EMBER_EMULATED_GPUS (default 2).
int device_count();
// The calling host thread's current device (cudaSetDevice), 0 at first.
int current_device();

// The emulated device whose memory holds [ptr, ptr + bytes), or -1 when that range is not inside
// one live cudaMalloc allocation.
int device_of(const void* ptr, size_t bytes = 1);

// The device `stream` belongs to: the current device for the legacy default stream (nullptr);
// -1 for a stream that does not exist (never created, or destroyed).
int stream_device(cudaStream_t stream);

// Thrown inside queued work: the stream's device records `code` as its sticky error, with
// `what()` as the details that cudaGetErrorString gives.
struct DeviceError : std::runtime_error {
  DeviceError(cudaError_t c, const std::string& details) : std::runtime_error(details), code(c) {}
  cudaError_t code;
};

// Queues `work` on `stream` behind everything queued there before (or, while the stream is being
// captured, records it into the graph instead, to run at each cudaGraphLaunch). `work` runs on
// the stream's worker thread, with every device's memory accessible, after any random delay of
// EMBER_EMULATED_JITTER. It may block (an NCCL collective waits for its peers on their own
// streams' workers). `what` names the operation in error messages ("ncclAllReduce").
// Returns cudaSuccess, or the error the call must return: cudaErrorInvalidResourceHandle for an
// unknown stream, a capture error, or the device's sticky error.
cudaError_t enqueue(cudaStream_t stream, const char* what, std::function<void()> work);

}  // namespace ember::emu::device
