// conv2d with groups, strides and 1x1 kernels (issue 17): the depthwise 3x3 of a MobileNet block at
// stride 1 and 2, a grouped 3x3 of a ResNeXt-style block, and every convolution shape of ResNet-8
// (ember-fashion's network, at its batch of 128: the layers behind resnet8_train_step), forward /
// input gradient / weight gradient, as the conv2d cases of bench_ops.cpp. The depthwise conv is
// memory-bound: its GB/s against the target's copy bandwidth ceiling is the number to read.
#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;

struct GroupedCase {
  const char* name;
  int64_t n, c, h, w, k, r, stride, padding, groups;
  int64_t p() const { return (h + 2 * padding - r) / stride + 1; }
  int64_t q() const { return (w + 2 * padding - r) / stride + 1; }
  double flops() const { return 2.0 * n * k * p() * q() * (c / groups) * r * r; }
  // Each tensor once: x, w and y (the backward passes move as much: dy, w, dx or dy, x, dw).
  double bytes() const { return 4.0 * (n * c * h * w + k * (c / groups) * r * r + n * k * p() * q()); }
};

const GroupedCase kCases[] = {
    {"depthwise", 32, 144, 28, 28, 144, 3, 1, 1, 144},     // MobileNetV2 block, 3x3 s1 p1
    {"depthwise_s2", 32, 144, 56, 56, 144, 3, 2, 1, 144},  // its stride-2 block: 56x56 -> 28x28
    {"grouped", 32, 64, 28, 28, 64, 3, 1, 1, 4},           // ResNeXt-style 3x3, groups 4
    // ResNet-8 at batch 128: the stem, then each block's 3x3 convolutions and 1x1 shortcuts.
    {"resnet8_stem", 128, 1, 28, 28, 16, 3, 1, 1, 1},
    {"resnet8_c16", 128, 16, 28, 28, 16, 3, 1, 1, 1},
    {"resnet8_c32_s2", 128, 16, 28, 28, 32, 3, 2, 1, 1},
    {"resnet8_c32", 128, 32, 14, 14, 32, 3, 1, 1, 1},
    {"resnet8_c32_1x1_s2", 128, 16, 28, 28, 32, 1, 2, 0, 1},
    {"resnet8_c64_s2", 128, 32, 14, 14, 64, 3, 2, 1, 1},
    {"resnet8_c64", 128, 64, 7, 7, 64, 3, 1, 1, 1},
    {"resnet8_c64_1x1_s2", 128, 32, 14, 14, 64, 1, 2, 0, 1},
};

}  // namespace

void register_conv_groups_cases(const Target& target) {
  for (const GroupedCase& c : kCases) {
    for (int pass = 0; pass < 3; ++pass) {
      static const char* kPass[] = {"forward", "input_grad", "weight_grad"};
      add(std::string("conv2d/") + c.name + "/" + kPass[pass], target,
          [c, pass](benchmark::State& state, const Target& t) {
            guarded(state, [&] {
              Tensor x = randn({c.n, c.c, c.h, c.w}).to(t.device());
              Tensor w = randn({c.k, c.c / c.groups, c.r, c.r}).to(t.device()), b = randn({c.k}).to(t.device());
              if (pass == 1) x.requires_grad_();
              if (pass == 2) {
                w.requires_grad_();
                b.requires_grad_();
              }
              const F::Conv2dOptions options{.stride = c.stride, .padding = c.padding, .groups = c.groups};
              Tensor dy = randn({c.n, c.k, c.p(), c.q()}).to(t.device());
              Timer timer(state, t);
              auto conv = [&] { return F::conv2d(x, w, b, options); };
              if (pass == 0) time_forward(state, timer, conv);
              else time_backward(state, timer, conv, dy, {x, w, b});
              report(state, t, timer, c.flops(), c.bytes());
            });
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace ember::bench
