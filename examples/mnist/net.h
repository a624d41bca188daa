// The tutorial network of DESIGN.md, shared by ember-mnist, its tests and the benchmarks.
// defines: ember::examples::Net
#pragma once

#include "ember/nn/functional.h"
#include "ember/nn/conv.h"
#include "ember/nn/linear.h"
#include "ember/nn/pooling.h"

namespace ember::examples {

// Conv2d(1,10,5) -> MaxPool2d(2) -> ReLU -> Conv2d(10,20,5) -> MaxPool2d(2) -> ReLU -> flatten ->
// Linear(320,10). Input [N, 1, 28, 28], output logits [N, 10].
struct Net : nn::Module {
  nn::Conv2d conv1{1, 10, 5}, conv2{10, 20, 5};
  nn::MaxPool2d pool{2};
  nn::Linear fc{320, 10};
  Net() { register_modules({{"conv1", conv1}, {"conv2", conv2}, {"fc", fc}}); }
  Tensor forward(const Tensor& input) override {
    Tensor x = nn::functional::relu(pool(conv1(input)));
    x = nn::functional::relu(pool(conv2(x)));
    return fc(x.flatten(1));
  }
};

}  // namespace ember::examples
