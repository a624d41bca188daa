// Containers that hold submodules without running them, as torch.nn's: Identity, ModuleList,
// ModuleDict.
// defines: ember::nn::Identity, ember::nn::ModuleList, ember::nn::ModuleDict
//
// Submodules are registered under PyTorch's names ("0", "1", ... in a ModuleList; the keys in a
// ModuleDict), so state_dict keys match PyTorch's ("blocks.0.weight"), and repr prints as PyTorch.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/common/error.h"
#include "ember/nn/module.h"

namespace ember::nn {

// Returns its input unchanged (the same tensor handle), as torch.nn.Identity.
class Identity : public Module {
 public:
  Tensor forward(const Tensor& input) override { return input; }
};

// A list of owned submodules, indexed from 0. Its forward throws NotImplemented: the model that
// holds it decides how to call the layers (`for (auto& layer : blocks) x = (*layer)(x);`).
class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules) { extend(std::move(modules)); }

  // Appends a module (registered as "<size>"). Throws for a null pointer.
  void push_back(std::shared_ptr<Module> module);
  // Takes a leaf module (Linear, ReLU, ...) by value (see Module's move constructor).
  template <class Layer, class = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<Layer>>>>
  void push_back(Layer&& layer) {
    push_back(std::make_shared<std::decay_t<Layer>>(std::forward<Layer>(layer)));
  }
  template <class Layer>
  void append(Layer&& layer) {
    push_back(std::forward<Layer>(layer));
  }
  void extend(const std::vector<std::shared_ptr<Module>>& modules);
  void extend(const ModuleList& other) { extend(other.modules_); }

  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // The module at `index`; negative indices count from the end, as in Python. Throws when out of range.
  Module& operator[](int64_t index) const;
  const std::shared_ptr<Module>& ptr(int64_t index) const;
  // The module at `index` as a T&; throws ember::Error naming both types when it is not a T.
  template <class T>
  T& at(int64_t index) const {
    Module& m = (*this)[index];
    T* typed = dynamic_cast<T*>(&m);
    EMBER_CHECK(typed != nullptr, "ModuleList::at: module ", index, " is a ", m.name(), ", not the requested type");
    return *typed;
  }

  // Iterates over the std::shared_ptr<Module> of each entry, in order.
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

  Tensor forward(const Tensor& input) override;

 private:
  size_t checked_index(int64_t index) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

// Owned submodules by name, in insertion order. Its forward throws NotImplemented.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  explicit ModuleDict(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& items);

  // Adds `module` under `key`, or puts it in place of the module already there (keeping its
  // position, as libtorch's insert and Python's dict[key] = module). Throws for an empty key or
  // one with a '.', and for a null pointer.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  template <class Layer, class = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<Layer>>>>
  void insert(const std::string& key, Layer&& layer) {
    insert(key, std::make_shared<std::decay_t<Layer>>(std::forward<Layer>(layer)));
  }

  bool contains(const std::string& key) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // The module under `key`; throws ember::Error naming the key (and the keys present) when absent.
  Module& operator[](const std::string& key) const;
  Module& at(const std::string& key) const { return (*this)[key]; }
  template <class T>
  T& at(const std::string& key) const {
    Module& m = (*this)[key];
    T* typed = dynamic_cast<T*>(&m);
    EMBER_CHECK(typed != nullptr, "ModuleDict::at: module \"", key, "\" is a ", m.name(),
                ", not the requested type");
    return *typed;
  }
  const std::shared_ptr<Module>& ptr(const std::string& key) const;
  // In insertion order.
  std::vector<std::string> keys() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items_;
};

}  // namespace ember::nn
