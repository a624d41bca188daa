// ember-bench cases for ConvTranspose2d (nn/functional_conv_transpose.cpp): a U-Net decoder's
// 2x2 stride-2 upsampling ([32, 64, 14, 14] -> [32, 32, 28, 28]) and DCGAN's 4x4 stride-2
// kernel ([64, 128, 8, 8] -> [64, 64, 16, 16]); the forward, and the backward alone (input and
// weight gradients).
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/conv.h"

namespace ember::bench {

void register_conv_transpose_cases(const Target& target) {
  struct Layer {
    const char* name;
    Shape input;
    int64_t out_channels, kernel, padding;
  };
  const Layer layers[] = {{"unet_up", {32, 64, 14, 14}, 32, 2, 0}, {"dcgan", {64, 128, 8, 8}, 64, 4, 1}};
  for (const Layer& l : layers) {
    for (bool backward : {false, true}) {
      add(std::string("conv_transpose2d/") + l.name + "/" + (backward ? "backward" : "forward"), target,
          [l, backward](benchmark::State& state, const Target& t) {
            guarded(state, [&] {
              nn::ConvTranspose2d up(l.input[1], l.out_channels, l.kernel, {.stride = 2, .padding = l.padding});
              up.to(t.device());
              Tensor x = randn(l.input).to(t.device());
              if (backward) x.requires_grad_();
              Tensor probe = [&] {
                NoGradGuard no_grad;
                return up(x);
              }();
              Tensor dy = randn(probe.sizes()).to(t.device());
              Timer timer(state, t);
              auto forward = [&] { return up(x); };
              if (backward) {
                time_backward(state, timer, forward, dy, {x}, [&] { up.zero_grad(); });
              } else {
                NoGradGuard no_grad;
                time_forward(state, timer, forward);
              }
              // One multiply-add per input element, output channel and kernel tap (x2: input and
              // weight gradients in the backward).
              const double flops = 2.0 * double(x.numel()) * double(l.out_channels * l.kernel * l.kernel);
              report(state, t, timer, backward ? 2 * flops : flops, 0);
            });
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace ember::bench
