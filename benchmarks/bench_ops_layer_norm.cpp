// ember-bench cases for LayerNorm (nn/functional_layer_norm.cpp): the forward and the backward
// alone (input, weight and bias gradients) over the features of a transformer's tokens
// ([32, 128, 512]) and a ConvNeXt stage in channels-last order ([32, 56 * 56, 96]).
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/normalization.h"

namespace ember::bench {

void register_layer_norm_cases(const Target& target) {
  const std::pair<const char*, Shape> shapes[] = {{"tokens_d512", {32, 128, 512}}, {"convnext_d96", {32, 3136, 96}}};
  for (const auto& [name, shape] : shapes) {
    for (bool backward : {false, true}) {
      add(std::string("layer_norm/") + name + "/" + (backward ? "backward" : "forward"), target,
          [shape = shape, backward](benchmark::State& state, const Target& t) {
            guarded(state, [&] {
              nn::LayerNorm ln(shape.back());
              ln.to(t.device());
              Tensor x = randn(shape).to(t.device());
              Tensor dy = randn(shape).to(t.device());
              if (backward) x.requires_grad_();
              Timer timer(state, t);
              auto forward = [&] { return ln(x); };
              if (backward) {
                time_backward(state, timer, forward, dy, {x}, [&] { ln.zero_grad(); });
              } else {
                NoGradGuard no_grad;  // as the peers: no graph for the timed forward
                time_forward(state, timer, forward);
              }
              // Bytes per element: the forward reads x twice and writes y; the backward reads dy
              // and x twice each and writes dx.
              const double n = double(x.numel()) * sizeof(float);
              report(state, t, timer, 0, backward ? 5 * n : 3 * n);
            });
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace ember::bench
