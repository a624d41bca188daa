// The emulated GPUs' streams, as the rest of the emulated device uses them (streams.cpp): work
// queued per stream and run by the stream's own worker thread, and the checks that CUDA makes of
// calls during a graph capture.
// defines: ember::emu::device::{Work, enqueue_work, wait_for, synchronize_stream, fail,
//          unsafe_during_capture, fail_if_capturing, synchronize_device,
//          sticky_error}
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

namespace ember::emu::device {

// Records `code` as this host thread's last error with `details` for cudaGetErrorString, and
// returns it: `return fail(cudaErrorInvalidValue, "...")`.
cudaError_t fail(cudaError_t code, const std::string& details);

// One piece of queued work. Device work (kernels, copies, fills, collectives) is skipped once
// its device has faulted, as on a GPU whose context is lost; markers (events) always run.
struct Work {
  std::string what;  // names it in errors: the kernel, "cudaMemcpyAsync", "ncclAllReduce"
  std::function<void()> run;
  bool device_work = true;
};

// Queues `work` on `stream` (nullptr: the current device's legacy default stream) or records it
// into the stream's capture. On success `ticket`, when given, receives what wait_for needs (empty for
// captured work). The error returned is also recorded with fail().
struct Ticket {
  std::shared_ptr<CUstream_st> stream;  // the stream the work went to, resolved; null when captured
  uint64_t position = 0;
};
cudaError_t enqueue_work(cudaStream_t stream, Work work, Ticket* ticket = nullptr);
// Blocks until the work of `ticket` (and everything queued before it on its stream) has run.
void wait_for(const Ticket& ticket);

// Whether work queued on `stream` now would be captured.
bool capturing(cudaStream_t stream);

// CUDA's "potentially unsafe" calls (cudaMalloc, cudaFree, cudaDeviceSynchronize) fail during a
// capture, as the capture mode of the capture and of the calling thread decide
// (cudaThreadExchangeStreamCaptureMode); the failure invalidates the capture.
cudaError_t unsafe_during_capture(const char* call);
// For a call that may not be captured on `stream` (a copy from pageable memory): fails, and
// invalidates the capture, when the stream is capturing.
cudaError_t fail_if_capturing(cudaStream_t stream, const char* call, const char* why);

// Blocks until every stream of `device` has run what was queued on it (no capture check).
void synchronize_device(int device);

// The device's sticky error (the first fault of its work), recorded with fail(), or cudaSuccess.
cudaError_t sticky_error(int device);

}  // namespace ember::emu::device
