// Graph capture and replay on the emulated GPUs. While a stream captures, its work is recorded
// (enqueue_work appends it to the capture's nodes) instead of run; cudaGraphLaunch queues the
// nodes, in issue order, as one piece of work on the launch stream. What CUDA forbids during a
// capture (a synchronisation, an allocation, a copy from pageable memory) fails and invalidates
// the capture: streams.cpp's unsafe_during_capture and fail_if_capturing.
#include <algorithm>

#include "ember/kernels/cuda/emulator/device/stream_state.h"

using namespace ember::emu::device;

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return fail(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode: null mode");
  std::swap(*mode, this_thread_capture_mode());
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  std::lock_guard lock(queues().mutex);
  auto stream = resolve(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle, "cudaStreamBeginCapture: no such stream");
  if (stream->legacy_default) {
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture: the legacy default stream cannot be captured");
  }
  if (stream->capture) return fail(cudaErrorIllegalState, "cudaStreamBeginCapture: the stream is already capturing");
  auto capture = std::make_shared<Capture>();
  capture->mode = mode;
  capture->thread = std::this_thread::get_id();
  capture->origin = stream.get();
  stream->capture = capture;
  queues().captures.push_back(capture);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  std::shared_ptr<Capture> capture;
  {
    std::lock_guard lock(queues().mutex);
    auto stream = resolve(handle);
    if (!stream || graph == nullptr) return fail(cudaErrorInvalidValue, "cudaStreamEndCapture: no such stream");
    if (!stream->capture || stream->capture->origin != stream.get()) {
      return fail(cudaErrorIllegalState, "cudaStreamEndCapture: the stream did not begin a capture");
    }
    capture = std::move(stream->capture);
    for (CUstream_st* joined : capture->joined) {
      if (auto it = queues().streams.find(joined); it != queues().streams.end()) it->second->capture = nullptr;
    }
    capture->origin = nullptr;
    std::erase(queues().captures, capture);
  }
  *graph = nullptr;
  if (capture->invalidated != cudaSuccess) {
    return fail(cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture: " + capture->why);
  }
  *graph = new CUgraph_st{std::move(capture->nodes)};
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status) {
  std::lock_guard lock(queues().mutex);
  auto stream = resolve(handle);
  if (!stream || status == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaStreamIsCapturing: no such stream");
  *status = !stream->capture                             ? cudaStreamCaptureStatusNone
            : stream->capture->invalidated != cudaSuccess ? cudaStreamCaptureStatusInvalidated
                                                          : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (exec == nullptr || graph == nullptr) return fail(cudaErrorInvalidValue, "cudaGraphInstantiate: null graph");
  *exec = new CUgraphExec_st{graph->nodes};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  if (exec == nullptr) return fail(cudaErrorInvalidValue, "cudaGraphLaunch: null graph");
  auto nodes = std::make_shared<std::vector<Work>>(exec->nodes);
  return enqueue_work(stream, Work{"cudaGraphLaunch", [nodes] {
                                     for (const Work& node : *nodes) node.run();
                                   }});
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
