// The layers of the tutorial network and friends, each a Module calling nn::functional.
// defines: ember::nn::{Conv2d, MaxPool2d, ReLU, Linear, Flatten, Dropout, Sequential}
#pragma once

#include <memory>
#include <type_traits>
#include <vector>

#include "ember/nn/functional.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct Conv2dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  bool bias = true;
};

// weight [out, in, k, k] and bias [out], initialised as torch.nn.Conv2d.
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Conv2d"; }
  std::string extra_repr() const override;

  Tensor weight, bias;

 private:
  int64_t in_channels_, out_channels_, kernel_size_;
  Conv2dOptions options_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;

 private:
  functional::MaxPool2dOptions options_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& input) override { return functional::relu(input); }
  std::string name() const override { return "ReLU"; }
};

// weight [out, in] and bias [out], initialised as torch.nn.Linear.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;

  Tensor weight, bias;

 private:
  int64_t in_features_, out_features_;
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& input) override { return functional::flatten(input, start_dim_, end_dim_); }
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_, end_dim_;
};

// Active in train() mode only.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& input) override { return functional::dropout(input, p_, is_training()); }
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

 private:
  double p_;
};

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
  std::string name() const override { return "Sequential"; }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace ember::nn
