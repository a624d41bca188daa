// CUDA Graph capture and replay on a dedicated stream (see core/cuda/graph.h).
#include "ember/core/cuda/graph.h"

#include <string>

#include "ember/core/cuda/check.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"

namespace ember::cuda {

struct Graph::State {
  cudaStream_t stream = nullptr;  // capture and replay run here, never eager work
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

Graph::Graph(int device) : device_(device), state_(std::make_unique<State>()) {
  EMBER_CHECK(device >= 0 && device < device_count(), "cuda::Graph: device cuda:", device,
              " is not available (", device_count(), " CUDA devices found)");
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
}

Graph::~Graph() {
  DeviceGuard guard(device_);
  cudaStreamSynchronize(state_->stream);  // a replay may still be running
  if (state_->exec) cudaGraphExecDestroy(state_->exec);
  if (state_->graph) cudaGraphDestroy(state_->graph);
  if (state_->exec || state_->graph) detail::release_capture(device_, state_->stream);
  cudaStreamDestroy(state_->stream);
}

bool Graph::captured() const { return state_->exec != nullptr; }

void Graph::capture(const std::function<void()>& step) {
  EMBER_CHECK(!captured(), "cuda::Graph::capture: this graph already holds a capture; make a new Graph");
  DeviceGuard guard(device_);
  cudaStream_t eager = current_stream(device_);
  {
    // The capture stream starts after everything already queued on the eager stream.
    Event ready(device_);
    ready.record(eager);
    ready.wait(state_->stream);
  }
  EMBER_CUDA_CHECK(cudaStreamBeginCapture(state_->stream, cudaStreamCaptureModeThreadLocal));
  detail::begin_capture(device_, state_->stream);
  std::string failure;
  {
    StreamGuard on_capture_stream(device_, state_->stream);
    try {
      step();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  cudaGraph_t graph = nullptr;
  cudaError_t end_status = cudaStreamEndCapture(state_->stream, &graph);
  detail::end_capture(device_, state_->stream);
  if (failure.empty() && end_status != cudaSuccess) failure = cudaGetErrorString(end_status);
  if (!failure.empty()) {
    cudaGetLastError();  // capture errors are not sticky; clear them
    if (graph) cudaGraphDestroy(graph);
    // Hand back what the failed capture held, and start over on a fresh stream: the allocator
    // retires a stream whose capture it has released.
    cudaStreamSynchronize(state_->stream);
    cudaGetLastError();
    detail::release_capture(device_, state_->stream);
    cudaStreamDestroy(state_->stream);
    state_->stream = nullptr;
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
    throw Error(ember::detail::str("cuda::Graph::capture: the step could not be captured: ", failure,
                                   " (a captured step must not wait for the GPU: no .item(), .cpu() or "
                                   "printing of CUDA tensors, no host-to-device copy from pageable "
                                   "memory inside it)"));
  }
  state_->graph = graph;
  EMBER_CUDA_CHECK(cudaGraphInstantiate(&state_->exec, graph, 0));
}

void Graph::replay() {
  EMBER_CHECK(captured(), "cuda::Graph::replay: nothing captured yet; call capture(step) first");
  DeviceGuard guard(device_);
  cudaStream_t eager = current_stream(device_);
  Event inputs_ready(device_), step_done(device_);
  inputs_ready.record(eager);
  inputs_ready.wait(state_->stream);
  EMBER_CUDA_CHECK(cudaGraphLaunch(state_->exec, state_->stream));
  step_done.record(state_->stream);
  step_done.wait(eager);
}

}  // namespace ember::cuda
