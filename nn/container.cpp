#include "ember/nn/container.h"

#include <algorithm>

namespace ember::nn {

void ModuleList::push_back(std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "ModuleList: cannot append a null module");
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  // Copy first: `modules` may be this list's own vector (list.extend(list)).
  std::vector<std::shared_ptr<Module>> adding = modules;
  for (auto& m : adding) push_back(m);
}

size_t ModuleList::checked_index(int64_t index) const {
  const auto n = static_cast<int64_t>(modules_.size());
  EMBER_CHECK(index >= -n && index < n, "ModuleList: index ", index, " is out of range for ", n, " modules");
  return static_cast<size_t>(index < 0 ? index + n : index);
}

Module& ModuleList::operator[](int64_t index) const { return *modules_[checked_index(index)]; }

const std::shared_ptr<Module>& ModuleList::ptr(int64_t index) const { return modules_[checked_index(index)]; }

Tensor ModuleList::forward(const Tensor&) {
  throw NotImplemented("ModuleList has no forward: iterate over its modules and call each "
                       "(for (auto& layer : list) x = (*layer)(x);)");
}

ModuleDict::ModuleDict(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& items) {
  for (const auto& [key, module] : items) insert(key, module);
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> module) {
  EMBER_CHECK(module != nullptr, "ModuleDict: cannot insert a null module under \"", key, "\"");
  auto present = std::find_if(items_.begin(), items_.end(), [&](const auto& item) { return item.first == key; });
  if (present != items_.end()) {  // as libtorch's insert (and Python's d[key] = m): replaced in place
    replace_module(key, module);
    present->second = std::move(module);
    return;
  }
  register_module(key, module);
  items_.emplace_back(key, std::move(module));
}

bool ModuleDict::contains(const std::string& key) const {
  return std::any_of(items_.begin(), items_.end(), [&](const auto& item) { return item.first == key; });
}

const std::shared_ptr<Module>& ModuleDict::ptr(const std::string& key) const {
  auto found = std::find_if(items_.begin(), items_.end(), [&](const auto& item) { return item.first == key; });
  if (found == items_.end()) {
    std::string present;
    for (const auto& item : items_) present += (present.empty() ? "\"" : ", \"") + item.first + "\"";
    throw Error(detail::str("ModuleDict: no module under key \"", key, "\" (keys: ",
                                   present.empty() ? "none" : present, ")"));
  }
  return found->second;
}

Module& ModuleDict::operator[](const std::string& key) const { return *ptr(key); }

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

Tensor ModuleDict::forward(const Tensor&) {
  throw NotImplemented("ModuleDict has no forward: look its modules up by key and call them");
}

}  // namespace ember::nn
