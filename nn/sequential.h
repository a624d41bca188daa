// The container that runs its layers in order, as libtorch's torch/nn/modules/container/sequential.h.
// defines: ember::nn::Sequential
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

// Runs its layers in order. Layers are owned; indexing gives them back.
class Sequential : public Module {
 public:
  Sequential() = default;
  void push_back(std::shared_ptr<Module> layer);
  // Takes a leaf layer (Conv2d, ReLU, ...) by value.
  template <class Layer, class = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<Layer>>>>
  void push_back(Layer&& layer) {
    push_back(std::make_shared<std::decay_t<Layer>>(std::forward<Layer>(layer)));
  }
  Module& operator[](size_t index) const;
  size_t size() const { return layers_.size(); }
  Tensor forward(const Tensor& input) override;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace ember::nn
