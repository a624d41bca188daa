// CUDA Graphs: record a whole fixed-shape training step once, then replay it with one launch.
// defines: ember::cuda::Graph
//
//   Tensor x = ember::empty({64, 1, 28, 28}, {.device = cuda0}), y = ...;  // static inputs
//   for (int i = 0; i < 3; ++i) step(x, y);       // warm up: gradients, buffers, allocator cache
//   ember::cuda::Graph graph;
//   graph.capture([&] { step(x, y); });           // records; nothing runs on the GPU
//   for (auto& [inputs, target] : loader) {
//     x.copy_(inputs); y.copy_(target);           // new data into the same memory
//     graph.replay();                             // the whole step: one launch
//   }
//
// The step runs once on the host during capture: every kernel it queues on the device is
// recorded, with the addresses and scalar arguments it had (a learning rate passed as a number
// is frozen; change it by capturing again). The step must not wait for the GPU: .item(), .cpu(),
// printing or copying a CUDA tensor to the host inside it make capture fail with a clear error.
// Tensors created during capture keep their memory while the graph lives; replays write into
// it, so read the loss through a tensor the step stored outside (e.g. `loss_out.copy_(loss)`).
// A build or machine without CUDA has the class too; its methods throw.
#pragma once

#include <functional>
#include <memory>

namespace ember::cuda {

class Graph {
 public:
  explicit Graph(int device = 0);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Records what `step` queues on the device. Throws ember::Error naming what went wrong when
  // the step does something a capture cannot hold; the graph is then empty and may capture again.
  void capture(const std::function<void()>& step);
  // Runs the recorded step, ordered after work already queued on the device's current stream
  // and before work queued after it. Does not wait for it to finish.
  void replay();
  bool captured() const;
  int device() const { return device_; }

 private:
  struct State;
  int device_;
  std::unique_ptr<State> state_;
};

}  // namespace ember::cuda
