// The two blocks of docs/models.md, as a libtorch user writes them: a ResNet basic block and a
// MobileNet-style inverted residual. tests/nn/test_model_blocks.cpp checks both against PyTorch
// (tests/gen_block_fixtures.py builds the same blocks there); the docs page shows this code.
// defines: ember::models::BasicBlock, InvertedResidual, resnet8, print_activations
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::models {

// ResNet's basic block (He et al., 2016): two 3x3 convolutions, each followed by BatchNorm, added
// to a shortcut that is the input itself, or a 1x1 convolution + BatchNorm where the shape changes.
struct BasicBlock : nn::Module {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  nn::Sequential shortcut;  // empty: the identity

  BasicBlock(int64_t in_channels, int64_t out_channels, int64_t stride = 1)
      : conv1(in_channels, out_channels, 3, {.stride = stride, .padding = 1, .bias = false}),
        conv2(out_channels, out_channels, 3, {.padding = 1, .bias = false}),
        bn1(out_channels),
        bn2(out_channels) {
    if (stride != 1 || in_channels != out_channels) {
      shortcut.push_back(nn::Conv2d(in_channels, out_channels, 1, {.stride = stride, .bias = false}));
      shortcut.push_back(nn::BatchNorm2d(out_channels));
    }
    register_modules({{"conv1", conv1}, {"bn1", bn1}, {"conv2", conv2}, {"bn2", bn2}, {"shortcut", shortcut}});
  }

  Tensor forward(const Tensor& x) override {
    Tensor out = nn::functional::relu(bn1(conv1(x)));
    out = bn2(conv2(out));
    return nn::functional::relu(out + shortcut(x));
  }
};

// MobileNetV2's inverted residual (Sandler et al., 2018) with SiLU: a 1x1 convolution widens the
// channels `expansion` times, a 3x3 depthwise convolution (groups = channels) filters each channel
// alone, a 1x1 convolution projects back; the input is added when the shape allows.
struct InvertedResidual : nn::Module {
  nn::Conv2d expand, depthwise, project;
  nn::BatchNorm2d bn1, bn2, bn3;
  bool residual;

  InvertedResidual(int64_t in_channels, int64_t out_channels, int64_t stride = 1, int64_t expansion = 4)
      : expand(in_channels, in_channels * expansion, 1, {.bias = false}),
        depthwise(in_channels * expansion, in_channels * expansion, 3,
                  {.stride = stride, .padding = 1, .groups = in_channels * expansion, .bias = false}),
        project(in_channels * expansion, out_channels, 1, {.bias = false}),
        bn1(in_channels * expansion),
        bn2(in_channels * expansion),
        bn3(out_channels),
        residual(stride == 1 && in_channels == out_channels) {
    register_modules({{"expand", expand}, {"bn1", bn1}, {"depthwise", depthwise}, {"bn2", bn2},
                      {"project", project}, {"bn3", bn3}});
  }

  Tensor forward(const Tensor& x) override {
    Tensor out = nn::functional::silu(bn1(expand(x)));
    out = nn::functional::silu(bn2(depthwise(out)));
    out = bn3(project(out));
    return residual ? x + out : out;
  }
};

// ResNet-8 for 28x28 images (issue 18's network, 77,754 parameters with 1 input channel and 10
// classes): a 3x3 stem, three basic blocks of 16, 32 and 64 channels, global average pooling.
inline std::shared_ptr<nn::Sequential> resnet8(int64_t in_channels = 1, int64_t classes = 10) {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(nn::Conv2d(in_channels, 16, 3, {.padding = 1, .bias = false}));
  net->push_back(nn::BatchNorm2d(16));
  net->push_back(nn::ReLU());
  net->push_back(std::make_shared<BasicBlock>(16, 16));
  net->push_back(std::make_shared<BasicBlock>(16, 32, 2));
  net->push_back(std::make_shared<BasicBlock>(32, 64, 2));
  net->push_back(nn::AdaptiveAvgPool2d(1));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(64, classes));
  return net;
}

// Runs `batch` through `model` and writes, for every module, its name, output shape and mean
// output: forward hooks on named_modules(), removed afterwards.
inline void print_activations(nn::Module& model, const Tensor& batch, std::ostream& out) {
  std::vector<nn::RemovableHandle> handles;
  for (auto& [name, module] : model.named_modules()) {
    handles.push_back(module->register_forward_hook(
        [&out, name = name](nn::Module& m, const Tensor&, const Tensor& output) {
          out << (name.empty() ? "(model)" : name) << " " << m.name() << ": " << shape_str(output.sizes())
              << " mean " << mean(output).item<float>() << "\n";
        }));
  }
  model(batch);
  for (auto& handle : handles) handle.remove();
}

}  // namespace ember::models
