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
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::nn {

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
  // Calls forward(), recording the output shape while a summary() is being taken.
  Tensor operator()(const Tensor& input);

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

  // Recursive, in registration order, with dotted names ("conv1.weight").
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> buffers() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<Module*> children() const;
  const std::vector<std::pair<std::string, Module*>>& named_children() const { return children_; }

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

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<std::shared_ptr<Module>> owned_children_;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

// model.summary(input_shape) through the model's own forward, whatever its signature (as
// DESIGN.md's Net, whose `Tensor forward(Tensor)` does not override Module::forward).
template <class Model>
std::string summary(Model& model, const Shape& input_shape) {
  return model.summary(input_shape, [&model](const Tensor& x) { return model.forward(x); });
}

}  // namespace ember::nn
