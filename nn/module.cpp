#include "ember/nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>
#include <typeinfo>

#include "ember/common/error.h"
#include "ember/core/autograd.h"

namespace ember::nn {

// A module's hooks, each with the id its RemovableHandle names.
struct ForwardHooks {
  int64_t next_id = 0;
  std::vector<std::pair<int64_t, ForwardPreHook>> pre;
  std::vector<std::pair<int64_t, ForwardHook>> post;
};

void RemovableHandle::remove() {
  std::shared_ptr<ForwardHooks> hooks = hooks_.lock();
  if (!hooks) return;
  auto drop = [this](auto& list) {
    list.erase(std::remove_if(list.begin(), list.end(), [this](const auto& entry) { return entry.first == id_; }),
               list.end());
  };
  drop(hooks->pre);
  drop(hooks->post);
  hooks_.reset();
}

namespace {

// While Module::summary() runs a forward pass, operator() appends a row here for each layer.
struct SummaryRow {
  const Module* module;
  Shape output;
};
thread_local std::vector<SummaryRow>* summary_rows = nullptr;

// Moves `t` (and its gradient) keeping the handles, which optimizers and user code hold.
void move_tensor(Tensor t, Device device, DType dtype) {
  NoGradGuard no_grad;
  Tensor grad = t.grad();
  t.set_data(t.detach().to(device, dtype));
  if (grad.defined()) grad.set_data(grad.to(device, dtype));
}

template <class Get>
void collect(const Module& module, const std::string& prefix, Get get,
             std::vector<std::pair<std::string, Tensor>>& out) {
  for (const auto& [name, tensor] : get(module)) out.emplace_back(prefix + name, tensor);
  for (const auto& [name, child] : module.named_children()) collect(*child, prefix + name + ".", get, out);
}

}  // namespace

Module::Module(Module&& other)
    : training_(other.training_),
      parameters_(std::move(other.parameters_)),
      buffers_(std::move(other.buffers_)),
      owned_children_(std::move(other.owned_children_)),
      hooks_(std::move(other.hooks_)) {
  for (const auto& [name, child] : other.children_) {
    bool owned = std::any_of(owned_children_.begin(), owned_children_.end(),
                             [child = child](const std::shared_ptr<Module>& m) { return m.get() == child; });
    EMBER_CHECK(owned, "cannot move a ", other.name(), ": its submodule \"", name, "\" was registered by reference; "
                "hold the module in a std::shared_ptr (e.g. Sequential::push_back(std::make_shared<...>()))");
  }
  children_ = std::move(other.children_);
}

std::string Module::name() const {
  // The dynamic type's name, demangled ("ember::nn::Conv2d", "(anonymous namespace)::Net"), less
  // its namespaces outside any template arguments: "Conv2d", "Net", "Block<float>".
  const char* mangled = typeid(*this).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string full = status == 0 && demangled ? demangled.get() : mangled;
  const size_t end = std::min(full.find('<'), full.size());
  const size_t colons = full.rfind("::", end);
  return colons == std::string::npos ? full : full.substr(colons + 2);
}

Tensor Module::forward(const Tensor&) {
  throw NotImplemented(detail::str("forward not implemented for ", name(),
                                   ": override Tensor forward(const Tensor&) to call it through a Module&"));
}

Tensor Module::operator()(const Tensor& input) {
  if (!hooks_ || (hooks_->pre.empty() && hooks_->post.empty())) {
    Tensor output = forward(input);
    if (summary_rows) summary_rows->push_back({this, output.sizes()});
    return output;
  }
  // Copies of the lists (and of the owning pointer): a hook may remove itself or others, or
  // register new ones, which take effect from the next call, as in PyTorch.
  std::shared_ptr<ForwardHooks> hooks = hooks_;
  Tensor x = input;
  for (auto [id, hook] : std::vector(hooks->pre)) {
    if (std::optional<Tensor> replaced = hook(*this, x)) x = std::move(*replaced);
  }
  Tensor output = forward(x);
  for (auto [id, hook] : std::vector(hooks->post)) {
    if (std::optional<Tensor> replaced = hook(*this, x, output)) output = std::move(*replaced);
  }
  if (summary_rows) summary_rows->push_back({this, output.sizes()});
  return output;
}

RemovableHandle Module::add_pre_hook(ForwardPreHook hook) {
  EMBER_CHECK(hook != nullptr, "register_forward_pre_hook: the hook is empty");
  if (!hooks_) hooks_ = std::make_shared<ForwardHooks>();
  const int64_t id = hooks_->next_id++;
  hooks_->pre.emplace_back(id, std::move(hook));
  return RemovableHandle(hooks_, id);
}

RemovableHandle Module::add_hook(ForwardHook hook) {
  EMBER_CHECK(hook != nullptr, "register_forward_hook: the hook is empty");
  if (!hooks_) hooks_ = std::make_shared<ForwardHooks>();
  const int64_t id = hooks_->next_id++;
  hooks_->post.emplace_back(id, std::move(hook));
  return RemovableHandle(hooks_, id);
}

void Module::check_new_name(const char* what, const std::string& name) const {
  EMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, what, ": invalid name \"", name,
              "\" (names are non-empty and have no '.')");
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& entry) { return entry.first == name; });
  };
  EMBER_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), what, ": \"", name,
              "\" is already registered in this ", this->name());
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  EMBER_CHECK(tensor.defined(), "register_parameter: parameter \"", name, "\" is undefined");
  check_new_name("register_parameter", name);
  EMBER_CHECK(is_floating(tensor.dtype()) || !requires_grad, "register_parameter: \"", name,
              "\" must be floating point to require grad, got ", dtype_name(tensor.dtype()));
  if (requires_grad) tensor.requires_grad_();
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
  EMBER_CHECK(tensor.defined(), "register_buffer: buffer \"", name, "\" is undefined");
  check_new_name("register_buffer", name);
  buffers_.emplace_back(name, tensor);
  return tensor;
}

Module& Module::register_module(const std::string& name, Module& module) {
  EMBER_CHECK(&module != this, "register_module: a module cannot contain itself");
  check_new_name("register_module", name);
  children_.emplace_back(name, &module);
  return module;
}

Module& Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "register_module: module \"", name, "\" is null");
  register_module(name, *module);
  owned_children_.push_back(std::move(module));
  return *owned_children_.back();
}

Module& Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "replace_module: module \"", name, "\" is null");
  EMBER_CHECK(module.get() != this, "replace_module: a module cannot contain itself");
  auto child = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  EMBER_CHECK(child != children_.end(), "replace_module: no submodule \"", name, "\" to replace");
  Module* old_module = child->second;
  child->second = module.get();
  // Drop the old module if this module owned it (a member registered by reference stays its owner's).
  std::erase_if(owned_children_, [&](const std::shared_ptr<Module>& owned) { return owned.get() == old_module; });
  owned_children_.push_back(std::move(module));
  return *owned_children_.back();
}

void Module::register_modules(
    std::initializer_list<std::pair<std::string, std::reference_wrapper<Module>>> modules) {
  for (const auto& [name, module] : modules) register_module(name, module.get());
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(*this, "", [](const Module& m) { return m.parameters_; }, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect(*this, "", [](const Module& m) { return m.buffers_; }, out);
  return out;
}

std::vector<Tensor> Module::buffers() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers()) out.push_back(t);
  return out;
}

std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (auto& [name, child] : children_) out.push_back(child);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out;
  std::set<const Module*> seen;
  std::function<void(Module&, const std::string&)> walk = [&](Module& m, const std::string& prefix) {
    if (!seen.insert(&m).second) return;  // a module shared in two places is listed once
    out.emplace_back(prefix, &m);
    for (auto& [name, child] : m.children_) walk(*child, prefix.empty() ? name : prefix + "." + name);
  };
  walk(*this, "");
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [name, child] : children_) child->apply(fn);
  fn(*this);
  return *this;
}

void Module::train(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->train(training);
}

Module& Module::to(Device device) {
  for (auto& [name, t] : named_parameters()) move_tensor(t, device, t.dtype());
  for (auto& [name, t] : named_buffers()) move_tensor(t, device, t.dtype());
  return *this;
}

Module& Module::to(DType dtype) {
  EMBER_CHECK(is_floating(dtype), "Module::to: parameters must stay floating point, got ", dtype_name(dtype));
  for (auto& [name, t] : named_parameters()) move_tensor(t, t.device(), dtype);
  for (auto& [name, t] : named_buffers()) {
    if (is_floating(t.dtype())) move_tensor(t, t.device(), dtype);
  }
  return *this;
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, t] : named_parameters()) out[name] = t.detach();
  for (auto& [name, t] : named_buffers()) out[name] = t.detach();
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  std::map<std::string, Tensor> own = state_dict();
  std::vector<std::string> problems;
  for (const auto& [name, t] : own) {
    auto found = state.find(name);
    if (found == state.end()) {
      if (strict) problems.push_back(detail::str("missing key \"", name, "\""));
    } else if (found->second.sizes() != t.sizes()) {
      problems.push_back(detail::str("\"", name, "\" has shape ", found->second.sizes(), " but the module expects ", t.sizes()));
    }
  }
  if (strict) {
    for (const auto& [name, t] : state) {
      if (!own.count(name)) problems.push_back(detail::str("unexpected key \"", name, "\""));
    }
  }
  if (!problems.empty()) {
    std::string message = "load_state_dict: ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message + " (the module was left unchanged)");
  }
  NoGradGuard no_grad;
  for (auto& [name, t] : own) {
    auto found = state.find(name);
    if (found != state.end()) t.copy_(found->second);
  }
}

std::string Module::summary(const Shape& input_shape) {
  return summary(input_shape, [this](const Tensor& x) { return forward(x); });
}

std::string Module::summary(const Shape& input_shape, const std::function<Tensor(const Tensor&)>& run_forward) {
  std::vector<SummaryRow> rows;
  {
    NoGradGuard no_grad;
    Device device = parameters().empty() ? Device::cpu() : parameters()[0].device();
    DType dtype = parameters().empty() ? kFloat32 : parameters()[0].dtype();
    Tensor input = zeros(input_shape, {.dtype = dtype, .device = device});
    bool was_training = training_;
    eval();
    summary_rows = &rows;
    try {
      run_forward(input);
    } catch (...) {
      summary_rows = nullptr;
      train(was_training);
      throw;
    }
    summary_rows = nullptr;
    train(was_training);
  }
  // Qualified names for the modules we know, to label the rows.
  std::map<const Module*, std::string> names;
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (auto& [name, child] : m.children_) {
      names[child] = prefix + name;
      walk(*child, prefix + name + ".");
    }
  };
  walk(*this, "");
  std::ostringstream out;
  out << std::left << std::setw(28) << "layer" << std::setw(22) << "output shape" << std::right << std::setw(12)
      << "parameters" << "\n" << std::string(62, '-') << "\n";
  std::set<const Module*> counted;
  int64_t total = 0;
  for (const SummaryRow& row : rows) {
    int64_t count = 0;
    if (counted.insert(row.module).second) {
      for (auto& [name, t] : row.module->parameters_) count += t.numel();
    }
    total += count;
    // A layer called in forward() but not registered (a shared pool, say) shows by type alone.
    std::string label = names.count(row.module) ? names[row.module] + " (" + row.module->name() + ")" : row.module->name();
    out << std::left << std::setw(28) << label << std::setw(22) << shape_str(row.output) << std::right
        << std::setw(12) << count << "\n";
  }
  int64_t all = 0;
  for (const Tensor& p : parameters()) all += p.numel();
  out << std::string(62, '-') << "\n" << std::left << std::setw(50) << "total parameters" << std::right
      << std::setw(12) << all << "\n";
  return out.str();
}

std::string Module::repr(int indent) const {
  std::string out = name() + "(" + extra_repr();
  if (!children_.empty()) {
    out += "\n";
    for (auto& [child_name, child] : children_) {
      out += std::string(indent + 2, ' ') + "(" + child_name + "): " + child->repr(indent + 2) + "\n";
    }
    out += std::string(indent, ' ');
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.repr(); }

}  // namespace ember::nn
