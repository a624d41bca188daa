#include "ember/core/autograd.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ember/common/error.h"
#include "ember/core/ops.h"

namespace ember {

namespace {

thread_local bool grad_mode = true;
std::atomic<uint64_t> next_sequence_nr{0};

AutogradMeta& meta_of(TensorImpl* impl) {
  if (!impl->autograd) impl->autograd = std::make_unique<AutogradMeta>();
  return *impl->autograd;
}

// A node built from a callable; release() drops the callable and with it every saved tensor.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, autograd::BackwardFn backward, std::vector<Shape> output_sizes,
               std::vector<TensorOptions> output_options)
      : name_(std::move(name)), backward_(std::move(backward)),
        output_sizes_(std::move(output_sizes)), output_options_(std::move(output_options)) {}

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    EMBER_CHECK(backward_, "backward: tried to run backward through the graph of ", name_,
                " a second time, after its saved tensors were freed; pass retain_graph=true to "
                "the first backward() to keep them");
    for (size_t i = 0; i < grad_outputs.size(); ++i) {
      if (!grad_outputs[i].defined()) grad_outputs[i] = zeros(output_sizes_[i], output_options_[i]);
    }
    return backward_(grad_outputs);
  }
  std::string name() const override { return name_; }
  void release() override { backward_ = nullptr; }

 private:
  std::string name_;
  autograd::BackwardFn backward_;
  std::vector<Shape> output_sizes_;
  std::vector<TensorOptions> output_options_;
};

// True when nothing but `t` can reach its memory: it is the only handle on its TensorImpl, the
// only tensor on its storage, and covers all of that storage.
bool exclusively_held(const Tensor& t) {
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 && t.is_contiguous() &&
         t.storage_offset() == 0 && t.nbytes() == t.storage()->nbytes() && !t.requires_grad();
}

// The sink of a leaf's gradients: adds them into .grad, then calls the leaf's hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
    sequence_nr = UINT64_MAX;  // runs as soon as it is ready
  }

  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override {
    Tensor leaf(leaf_);
    const Tensor& incoming = grad_outputs[0];
    if (!incoming.defined()) return {};  // every path into this leaf gave no gradient
    AutogradMeta& meta = meta_of(leaf_.get());
    EMBER_CHECK(incoming.sizes() == leaf.sizes(), "backward: the gradient of a leaf of shape ",
                leaf.sizes(), " has shape ", incoming.sizes());
    if (!meta.grad) {
      // The first gradient: adopt it when nothing else can see its memory (as PyTorch's
      // AccumulateGrad does), else keep a copy. Adopting saves a copy of every leaf's gradient a
      // step (zero_grad() drops them); a shared one, such as the caller's own tensor passed to
      // backward(), must not become .grad, which later backward calls add into in place. A
      // gradient converted to the leaf's device or dtype is a tensor of its own, adopted as is.
      Tensor grad = incoming.to(leaf.device(), leaf.dtype());
      grad_outputs[0] = Tensor();  // this node's own handle: `grad` may now be the only one
      meta.grad = (exclusively_held(grad) ? grad : grad.clone()).impl_ptr();
    } else {
      Tensor(meta.grad).add_(incoming);
    }
    for (const auto& [handle, hook] : meta.grad_ready_hooks) hook(leaf);
    return {};
  }
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = meta_of(leaf.impl());
  if (auto existing = meta.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl_ptr());
  meta.grad_accumulator = node;
  return node;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  if (t.grad_fn()) return {t.grad_fn(), t.impl()->autograd->output_nr};
  return {grad_accumulator(t), 0};
}

}  // namespace

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

// --- Tensor's autograd members -----------------------------------------------------------

bool Tensor::requires_grad() const {
  return defined() && impl_->autograd && impl_->autograd->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  EMBER_CHECK(defined(), "requires_grad_: called on an undefined tensor");
  EMBER_CHECK(is_leaf() || requires_grad, "requires_grad_: only leaf tensors can stop requiring grad; "
              "use detach()");
  EMBER_CHECK(!requires_grad || is_floating(dtype()), "requires_grad_: only floating-point tensors "
              "can require grad, got ", dtype_name(dtype()));
  meta_of(impl_.get()).requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return !defined() || !impl_->autograd || !impl_->autograd->grad_fn; }

Tensor Tensor::grad() const {
  if (!defined() || !impl_->autograd || !impl_->autograd->grad) return Tensor();
  return Tensor(impl_->autograd->grad);
}

void Tensor::set_grad(const Tensor& grad) {
  EMBER_CHECK(defined(), "set_grad: called on an undefined tensor");
  if (grad.defined()) {
    EMBER_CHECK(grad.sizes() == sizes(), "set_grad: gradient of shape ", grad.sizes(),
                " for a tensor of shape ", sizes());
    EMBER_CHECK(grad.device() == device(), "set_grad: gradient on ", grad.device(),
                " for a tensor on ", device());
  }
  meta_of(impl_.get()).grad = grad.defined() ? grad.impl_ptr() : nullptr;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  return defined() && impl_->autograd ? impl_->autograd->grad_fn : none;
}

Tensor Tensor::detach() const {
  EMBER_CHECK(defined(), "detach: called on an undefined tensor");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->sizes = impl_->sizes;
  impl->strides = impl_->strides;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph);
}

int64_t Tensor::register_grad_ready_hook(std::function<void(const Tensor&)> hook) const {
  EMBER_CHECK(requires_grad() && is_leaf(), "register_grad_ready_hook: expected a leaf tensor that "
              "requires grad");
  static std::atomic<int64_t> next_handle{1};
  const int64_t handle = next_handle++;
  meta_of(impl_.get()).grad_ready_hooks.emplace_back(handle, std::move(hook));
  return handle;
}

void Tensor::remove_grad_ready_hook(int64_t handle) const {
  if (!defined() || !impl_->autograd) return;
  auto& hooks = impl_->autograd->grad_ready_hooks;
  hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                             [handle](const auto& entry) { return entry.first == handle; }),
              hooks.end());
}

namespace autograd {

bool grad_mode_enabled() { return grad_mode; }
void set_grad_mode_enabled(bool enabled) { grad_mode = enabled; }

bool needs_grad(const std::vector<Tensor>& inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}
bool needs_grad(std::initializer_list<Tensor> inputs) {
  return grad_mode && std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.requires_grad(); });
}

SavedTensor::SavedTensor(const Tensor& tensor)
    : tensor_(tensor.defined() ? tensor.detach() : Tensor()),
      version_(tensor.defined() ? tensor.storage()->version() : 0) {}

Tensor SavedTensor::unpack(const std::string& op) const {
  if (tensor_.defined() && tensor_.storage()->version() != version_) {
    throw Error(ember::detail::str(op, " backward: a tensor of shape ", tensor_.sizes(),
                            " saved for the gradient was modified in place afterwards (version ",
                            version_, ", now ", tensor_.storage()->version(),
                            "); clone() it before changing it"));
  }
  return tensor_;
}

void record(std::string name, const std::vector<Tensor>& inputs, const std::vector<Tensor*>& outputs,
            BackwardFn backward) {
  std::vector<Shape> sizes;
  std::vector<TensorOptions> options;
  for (Tensor* out : outputs) {
    sizes.push_back(out->sizes());
    options.push_back({.dtype = out->dtype(), .device = out->device()});
  }
  auto node = std::make_shared<FunctionNode>(std::move(name), std::move(backward), std::move(sizes),
                                             std::move(options));
  node->sequence_nr = next_sequence_nr++;
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  for (const Tensor& input : inputs) node->next_edges.push_back(gradient_edge(input));
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    AutogradMeta& meta = meta_of(outputs[i]->impl());
    meta.requires_grad = true;
    meta.grad_fn = node;
    meta.output_nr = i;
  }
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads, bool retain_graph) {
  EMBER_CHECK(roots.size() == grads.size(), "backward: ", roots.size(), " roots but ", grads.size(),
              " gradients");
  // Gradients that arrive for each node's inputs, summed over every path.
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_gradient = [&](const Edge& edge, const Tensor& grad) {
    auto& buffer = buffers[edge.fn.get()];
    if (buffer.empty()) buffer.resize(edge.fn->num_outputs);
    Tensor& slot = buffer[edge.input_nr];
    slot = slot.defined() ? add(slot, grad) : grad;
  };

  NoGradGuard no_grad;
  std::vector<std::shared_ptr<Node>> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    EMBER_CHECK(root.requires_grad(), "backward: the tensor does not require grad and has no grad_fn "
                "(did an input call requires_grad_()? was it computed under NoGradGuard?)");
    Tensor grad = grads[i];
    if (!grad.defined()) {
      EMBER_CHECK(root.numel() == 1, "backward: a gradient can be implied only for a one-element "
                  "tensor, got shape ", root.sizes(), "; pass the upstream gradient explicitly");
      grad = ones_like(root);
    }
    EMBER_CHECK(grad.sizes() == root.sizes(), "backward: gradient of shape ", grad.sizes(),
                " for a tensor of shape ", root.sizes());
    Edge edge = gradient_edge(root);
    add_gradient(edge, grad);
    starts.push_back(edge.fn);
  }

  // Count, for each node, how many edges lead into it from the part of the graph we will run.
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (auto& start : starts) {
    if (seen.insert(start.get()).second) stack.push_back(start.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->next_edges) {
      if (!edge.fn) continue;
      ++dependencies[edge.fn.get()];
      if (seen.insert(edge.fn.get()).second) stack.push_back(edge.fn.get());
    }
  }

  // Run ready nodes, latest-created first: a reverse topological order of the recorded ops.
  auto later_first = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence_nr < b->sequence_nr;
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later_first)>
      ready(later_first);
  for (auto& start : starts) {
    if (dependencies[start.get()] == 0) {
      dependencies[start.get()] = -1;  // queued
      ready.push(start);
    }
  }
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    std::vector<Tensor> inputs = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    inputs.resize(node->num_outputs);
    std::vector<Tensor> outputs = node->apply(std::move(inputs));
    if (!retain_graph) node->release();
    EMBER_CHECK(outputs.size() == node->next_edges.size() || node->next_edges.empty(),
                "backward: ", node->name(), " returned ", outputs.size(), " gradients for ",
                node->next_edges.size(), " inputs");
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& edge = node->next_edges[i];
      if (!edge.fn) continue;
      if (outputs[i].defined()) add_gradient(edge, outputs[i]);
      if (--dependencies[edge.fn.get()] == 0) ready.push(edge.fn);
    }
  }
}

namespace detail {

void check_inplace(const Tensor& tensor, const char* op) {
  if (!grad_mode || !tensor.requires_grad()) return;
  if (tensor.is_leaf()) {
    throw Error(ember::detail::str(op, ": a leaf tensor that requires grad cannot be changed in place "
                                   "while grad mode is on; use NoGradGuard or detach()"));
  }
  throw NotImplemented(ember::detail::str(op, ": in-place ops on tensors that are part of an "
                                          "autograd graph are not supported yet"));
}

}  // namespace detail
}  // namespace autograd
}  // namespace ember
