// The base of every model: named parameters, buffers and submodules, moved and saved together.
// defines: ember::nn::Module
//
// Note [Parameter identity]: a parameter is a Tensor handle shared by its module and anyone who
// asked for it (an optimizer). Module::to() therefore never replaces the handle: it moves the data
// and then rewrites the tensor's own storage, sizes and strides in place, so every holder of the
// handle sees the parameter on its new device.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn {

class Module;

// Note [Module hooks]: a module's forward hooks live in a list the module holds through a
// shared_ptr; a RemovableHandle holds a weak_ptr to that list and the hook's id. So remove() is
// idempotent, and safe after the module is gone (it then does nothing). Moving a module moves
// its hooks with it (the list changes owner; handles keep working on the moved-to module). Hooks
// are called with the module they are registered on; registering or removing hooks while that
// module's forward runs on another thread is a data race, as any other change to a module.
struct ForwardHooks;

// What register_forward_hook / register_forward_pre_hook return, as PyTorch's RemovableHandle.
class RemovableHandle {
 public:
  RemovableHandle() = default;  // removes nothing
  RemovableHandle(std::weak_ptr<ForwardHooks> hooks, int64_t id) : hooks_(std::move(hooks)), id_(id) {}
  // Unregisters the hook. Idempotent; does nothing once the module is destroyed.
  void remove();

 private:
  std::weak_ptr<ForwardHooks> hooks_;
  int64_t id_ = -1;
};

// A pre-hook may return a tensor to replace the input; a hook may return one to replace the output.
using ForwardPreHook = std::function<std::optional<Tensor>(Module&, const Tensor& input)>;
using ForwardHook = std::function<std::optional<Tensor>(Module&, const Tensor& input, const Tensor& output)>;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // For layers handed to Sequential by value. Throws ember::Error for a module that registered a
  // submodule by reference (a member): the moved copy's pointer would still name the old member.
  Module(Module&& other);

  // The computation. The default throws NotImplemented ("forward not implemented for <name>").
  // Override this signature to make a module callable through a Module& (Sequential, summary(),
  // DataParallel); a model that only declares its own `Tensor forward(Tensor)`, as DESIGN.md's
  // Net, is still usable directly and through nn::summary(model, shape).
  virtual Tensor forward(const Tensor& input);
  // Runs the forward pre-hooks (each may replace the input), forward(), then the forward hooks
  // (each may replace the output), in registration order; records the output shape while a
  // summary() is being taken. Sequential and user models that call their layers through
  // operator() therefore run the layers' hooks too; calling forward() directly skips them.
  Tensor operator()(const Tensor& input);

  // Registers `hook(module, input)`, run before forward(); it returns std::optional<Tensor>
  // (a value replaces the input) or void. See Note [Module hooks].
  template <class Hook>
  RemovableHandle register_forward_pre_hook(Hook hook) {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook&, Module&, const Tensor&>>) {
      return add_pre_hook([hook = std::move(hook)](Module& m, const Tensor& in) mutable -> std::optional<Tensor> {
        hook(m, in);
        return std::nullopt;
      });
    } else {
      return add_pre_hook(ForwardPreHook(std::move(hook)));
    }
  }
  // Registers `hook(module, input, output)`, run after forward(); it returns
  // std::optional<Tensor> (a value replaces the output) or void. See Note [Module hooks].
  template <class Hook>
  RemovableHandle register_forward_hook(Hook hook) {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook&, Module&, const Tensor&, const Tensor&>>) {
      return add_hook([hook = std::move(hook)](Module& m, const Tensor& in, const Tensor& out) mutable
                      -> std::optional<Tensor> {
        hook(m, in, out);
        return std::nullopt;
      });
    } else {
      return add_hook(ForwardHook(std::move(hook)));
    }
  }

  // The type's name as printed: by default the class name of the dynamic type without its
  // namespaces ("Conv2d", a user's "Net"), as libtorch prints; override to print another. And
  // the type's arguments ("1, 10, kernel_size=(5, 5), ...").
  virtual std::string name() const;
  virtual std::string extra_repr() const { return ""; }

  // Registers a tensor as a parameter (it then requires grad) and returns the shared handle.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  Tensor register_buffer(const std::string& name, Tensor tensor);
  // Registers a submodule the caller owns (usually a member), or one this module will own.
  Module& register_module(const std::string& name, Module& module);
  Module& register_module(const std::string& name, std::shared_ptr<Module> module);
  void register_modules(std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> modules);
  // Puts `module` (owned from now on) in place of the submodule registered as `name`, keeping its
  // position, as libtorch's replace_module; throws ember::Error naming `name` when there is none.
  Module& replace_module(const std::string& name, std::shared_ptr<Module> module);

  // Recursive, in registration order, with dotted names ("conv1.weight").
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> buffers() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<Module*> children() const;
  const std::vector<std::pair<std::string, Module*>>& named_children() const { return children_; }
  // This module and every submodule, depth first in registration order, each once (as PyTorch):
  // self as "", then "conv1", "block", "block.0", ...
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<Module*> modules();
  // Calls fn on every submodule (children before their parent, as PyTorch), then on this module.
  // E.g. model.apply([](nn::Module& m) { if (auto* l = dynamic_cast<nn::Linear*>(&m)) ... }).
  Module& apply(const std::function<void(Module&)>& fn);

  void train(bool training = true);  // recursive
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves every parameter, buffer and existing gradient (see Note [Parameter identity]).
  Module& to(Device device);
  Module& to(DType dtype);
  // Drops every parameter's gradient (as PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  // Parameters and buffers by dotted name; the tensors share the module's storage.
  std::map<std::string, Tensor> state_dict() const;
  // Copies `state` into the parameters and buffers. Checks everything first: a missing key
  // (when strict), an unexpected key (when strict) or a wrong shape throws ember::Error naming
  // every offending key, and the module is left untouched.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  // A table of the layers a forward pass of a zero input of `input_shape` goes through: layer,
  // output shape, parameter count; and the total.
  // Requires a forward(const Tensor&) override; otherwise use nn::summary(model, shape).
  std::string summary(const Shape& input_shape);
  // The same, running `run_forward` (the model's own forward) on the zero input.
  std::string summary(const Shape& input_shape, const std::function<Tensor(const Tensor&)>& run_forward);

  // PyTorch's repr: the module tree with each layer's arguments.
  std::string repr(int indent = 0) const;

 protected:
  bool training_ = true;

 private:
  void check_new_name(const char* what, const std::string& name) const;
  RemovableHandle add_pre_hook(ForwardPreHook hook);
  RemovableHandle add_hook(ForwardHook hook);

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::shared_ptr<Module>> owned_children_;
  std::shared_ptr<ForwardHooks> hooks_;  // created by the first registration
};

std::ostream& operator<<(std::ostream& out, const Module& module);

// model.summary(input_shape) through the model's own forward, whatever its signature (as
// DESIGN.md's Net, whose `Tensor forward(Tensor)` does not override Module::forward).
template <class Model>
std::string summary(Model& model, const Shape& input_shape) {
  return model.summary(input_shape, [&model](const Tensor& x) { return model.forward(x); });
}

}  // namespace ember::nn
