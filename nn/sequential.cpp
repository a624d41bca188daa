#include "ember/nn/sequential.h"

#include <string>

#include "ember/common/error.h"

namespace ember::nn {

void Sequential::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

Module& Sequential::operator[](size_t index) const {
  EMBER_CHECK(index < layers_.size(), "Sequential: index ", index, " is out of range for ", layers_.size(), " layers");
  return *layers_[index];
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& layer : layers_) x = (*layer)(x);
  return x;
}

}  // namespace ember::nn
