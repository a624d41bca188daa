// ember-bench cases for clamp, var, masked_fill and dropout2d (core/ops_clamp.cpp, core/ops_reduce.cpp,
// core/ops_elementwise.cpp, nn/functional_activation.cpp) at the shapes models use them: ReLU6 on a
// MobileNet expansion, BatchNorm-style statistics of a ResNet feature map, a causal attention mask,
// channel dropout on a ResNet feature map.
#include <string>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {

void register_tensor_op_cases(const Target& target) {
  const Shape mobilenet{32, 144, 28, 28}, resnet{32, 64, 28, 28}, scores{32, 8, 128, 128};
  for (bool backward : {false, true}) {
    add(std::string("clamp/relu6_mobilenet/") + (backward ? "backward" : "forward"), target,
        [mobilenet, backward](benchmark::State& state, const Target& t) {
          guarded(state, [&] {
            Tensor x = mul(randn(mobilenet), 4.0).to(t.device());
            if (backward) x.requires_grad_();
            Tensor dy = randn(mobilenet).to(t.device());
            Timer timer(state, t);
            auto forward = [&] { return clamp(x, 0.0, 6.0); };
            if (backward) time_backward(state, timer, forward, dy, {x});
            else time_forward(state, timer, forward);
            report(state, t, timer, 0, (backward ? 12.0 : 8.0) * double(x.numel()));
          });
        })
        ->Unit(benchmark::kMicrosecond);
  }
  add("var/resnet_nhw/forward", target, [resnet](benchmark::State& state, const Target& t) {
    guarded(state, [&] {
      Tensor x = randn(resnet).to(t.device());
      Timer timer(state, t);
      time_forward(state, timer, [&] { return var(x, {0, 2, 3}); });
      report(state, t, timer, 0, 4.0 * double(x.numel()));  // the input read once at best
    });
  })->Unit(benchmark::kMicrosecond);
  add("masked_fill/causal_attention/forward", target, [scores](benchmark::State& state, const Target& t) {
    guarded(state, [&] {
      Tensor x = randn(scores).to(t.device());
      Tensor causal = gt(sub(arange(128.0).reshape({1, 128}), arange(128.0).reshape({128, 1})), 0.0).to(t.device());
      Timer timer(state, t);
      time_forward(state, timer, [&] { return masked_fill(x, causal, -1e4); });
      report(state, t, timer, 0, 8.0 * double(x.numel()));
    });
  })->Unit(benchmark::kMicrosecond);
  add("dropout2d/resnet/forward", target, [resnet](benchmark::State& state, const Target& t) {
    guarded(state, [&] {
      Tensor x = randn(resnet).to(t.device());
      Timer timer(state, t);
      time_forward(state, timer, [&] { return nn::functional::dropout2d(x, 0.2, true); });
      report(state, t, timer, 0, 8.0 * double(x.numel()));
    });
  })->Unit(benchmark::kMicrosecond);
}

}  // namespace ember::bench
