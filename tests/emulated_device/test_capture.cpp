// Graph capture on the emulated devices records the work issued on the capturing stream (and on
// streams that join it through an event) instead of running it; cudaGraphLaunch replays it. What
// CUDA forbids during a capture fails and invalidates the capture.
#include <catch2/catch.hpp>

#include <vector>

#include <cuda_runtime_api.h>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

using ember::Tensor;

namespace {

const ember::Device cuda0 = ember::Device::cuda(0);

struct CaptureStream {
  cudaStream_t stream = nullptr;
  CaptureStream() { REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess); }
  ~CaptureStream() { cudaStreamDestroy(stream); }
};

}  // namespace

TEST_CASE("captured work is recorded, not run, and each replay runs it, across a joined stream too") {
  Tensor x = ember::zeros({100}, {.device = cuda0});
  ember::cuda::synchronize();
  CaptureStream origin, forked;
  REQUIRE(cudaStreamBeginCapture(origin.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  {
    ember::cuda::StreamGuard on_origin(0, origin.stream);
    ember::NoGradGuard no_grad;
    x.add_(ember::ones({100}, {.device = cuda0}));
  }
  cudaEvent_t fork = nullptr, join = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(fork, origin.stream) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(forked.stream, fork, 0) == cudaSuccess);  // `forked` joins the capture
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  REQUIRE(cudaStreamIsCapturing(forked.stream, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  {
    ember::cuda::StreamGuard on_forked(0, forked.stream);
    ember::NoGradGuard no_grad;
    x.mul_(3.0);
  }
  REQUIRE(cudaEventRecord(join, forked.stream) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(origin.stream, join, 0) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(origin.stream, &graph) == cudaSuccess);
  ember::cuda::synchronize();
  CHECK(ember::allclose(x.cpu(), ember::zeros({100}), 0, 0));  // recorded only
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  for (int replay = 0; replay < 2; ++replay) REQUIRE(cudaGraphLaunch(exec, origin.stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(origin.stream) == cudaSuccess);
  CHECK(ember::allclose(x.cpu(), ember::full({100}, 12.0), 0, 0));  // ((0 + 1) * 3 + 1) * 3
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
}

TEST_CASE("an allocation or a synchronisation during a capture fails and invalidates it") {
  CaptureStream capture;
  void* p = nullptr;
  REQUIRE(cudaStreamBeginCapture(capture.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaMalloc(&p, 1024) == cudaErrorStreamCaptureUnsupported);
  CHECK_THAT(cudaGetErrorString(cudaGetLastError()), Catch::Contains("cudaMalloc is not permitted while a stream is being captured"));
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(capture.stream, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  cudaGetLastError();

  REQUIRE(cudaStreamBeginCapture(capture.stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  REQUIRE(cudaThreadExchangeStreamCaptureMode(&relaxed) == cudaSuccess);
  CHECK(cudaMalloc(&p, 1024) == cudaSuccess);  // relaxed: permitted, as the caching allocator does
  REQUIRE(cudaThreadExchangeStreamCaptureMode(&relaxed) == cudaSuccess);
  CHECK(cudaStreamSynchronize(capture.stream) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(capture.stream, &graph) == cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
  CHECK(cudaFree(p) == cudaSuccess);

  std::vector<float> pageable(16);
  Tensor t = ember::zeros({16}, {.device = cuda0});
  REQUIRE(cudaStreamBeginCapture(capture.stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  CHECK(cudaMemcpyAsync(pageable.data(), t.data_ptr(), 64, cudaMemcpyDeviceToHost, capture.stream) ==
        cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(capture.stream, &graph) == cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();
}
