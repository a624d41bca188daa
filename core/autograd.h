// The autograd engine: backward nodes recorded as ops run, and the reverse-order walk over them.
// defines: ember::Node, ember::Edge, ember::NoGradGuard, ember::autograd::{needs_grad, record,
//          SavedTensor, backward, grad_mode_enabled}
//
// Note [Recording an op]: an op that may need a gradient computes its output, then, when
// autograd::needs_grad(inputs) holds, calls autograd::record(name, inputs, outputs, backward)
// with a callable mapping the outputs' gradients to the inputs' gradients (undefined for an input
// that needs none). Tensors the backward needs are captured as SavedTensor, which checks at
// backward time that they were not modified in place since. Backward functions run with grad
// mode off, so they may use any op.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

class Node;

// Where a gradient flows: input `input_nr` of node `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
};

// One recorded op. Its inputs are the gradients of the op's outputs; its outputs are the
// gradients of the op's inputs, in the order of next_edges.
class Node {
 public:
  virtual ~Node() = default;
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  // Frees what the node saved for backward (called after backward unless retain_graph).
  virtual void release() {}

  std::vector<Edge> next_edges;
  uint32_t num_outputs = 1;   // how many gradient inputs apply() takes
  uint64_t sequence_nr = 0;   // creation order: later nodes run first
};

// Turns gradient recording off for its scope (on this thread), as torch::NoGradGuard.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

namespace autograd {

bool grad_mode_enabled();
void set_grad_mode_enabled(bool enabled);

// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// A tensor kept for backward, with the storage version it had when saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& tensor);
  // The saved tensor; throws ember::Error naming `op` if it was modified in place since.
  Tensor unpack(const std::string& op) const;
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
};

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

// Records `backward` as the grad_fn of every output (see Note [Recording an op]). Outputs become
// non-leaf tensors that require grad. Gradients of outputs that got none arrive as zeros.
void record(std::string name, const std::vector<Tensor>& inputs, const std::vector<Tensor*>& outputs,
            BackwardFn backward);

// Runs backward from `roots` with upstream gradients `grads` (an undefined gradient means ones
// for a one-element root). Accumulates into every reachable leaf's .grad.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              bool retain_graph = false);

namespace detail {
// Throws when `tensor` may not be changed in place: a leaf that requires grad while grad mode is on.
void check_inplace(const Tensor& tensor, const char* op);
}  // namespace detail

}  // namespace autograd
}  // namespace ember
