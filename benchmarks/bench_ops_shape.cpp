// ember-bench cases for cat (core/ops_shape.cpp): two ResNet-sized feature maps [32, 64, 28, 28]
// joined along channels, as a DenseNet block or a U-Net skip connection does.
#include <string>

#include "benchmarks/bench_common.h"

namespace ember::bench {

void register_shape_cases(const Target& target) {
  const Shape half{32, 64, 28, 28};
  for (bool backward : {false, true}) {
    add(std::string("cat/resnet/") + (backward ? "backward" : "forward"), target,
        [half, backward](benchmark::State& state, const Target& t) {
          guarded(state, [&] {
            Tensor a = randn(half).to(t.device()), b = randn(half).to(t.device());
            if (backward) {
              a.requires_grad_();
              b.requires_grad_();
            }
            Tensor dy = randn({half[0], 2 * half[1], half[2], half[3]}).to(t.device());
            Timer timer(state, t);
            auto forward = [&] { return cat({a, b}, 1); };
            if (backward) time_backward(state, timer, forward, dy, {a, b});
            else time_forward(state, timer, forward);
            // Both ways: read and write every element once (4 bytes each way).
            report(state, t, timer, 0, 8.0 * double(dy.numel()));
          });
        })
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace ember::bench
