// Activation cases: sigmoid, tanh, gelu, silu and hardswish forward and backward at a ResNet-8
// feature map ("act", [128, 16, 28, 28]) and a MobileNet expanded block ("act_mobilenet",
// [32, 144, 28, 28]). A backward case runs its forward outside the timer and times backward().
#include <functional>
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {

void register_activation_cases(const Target& target) {
  namespace F = nn::functional;
  const std::pair<const char*, std::function<Tensor(const Tensor&)>> ops[] = {
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return F::tanh(x); }},
      {"gelu", [](const Tensor& x) { return F::gelu(x); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }}};
  const std::pair<const char*, Shape> shapes[] = {{"act", {128, 16, 28, 28}}, {"act_mobilenet", {32, 144, 28, 28}}};
  for (const auto& [op_name, op] : ops) {
    for (const auto& [case_name, shape] : shapes) {
      for (bool backward : {false, true}) {
        add(std::string(op_name) + "/" + case_name + (backward ? "/backward" : "/forward"), target,
            [op = op, shape = shape, backward](benchmark::State& state, const Target& t) {
              Tensor x = randn(shape).to(t.device());
              if (backward) x.requires_grad_();
              Tensor dy = randn(shape).to(t.device());
              Timer timer(state, t);
              for (auto _ : state) {
                if (!backward) {
                  timer.start();
                  Tensor y = op(x);
                  timer.stop();
                } else {
                  Tensor y = op(x);
                  timer.start();
                  y.backward(dy);
                  timer.stop();
                  x.set_grad(Tensor());
                }
              }
              const double n = double(x.numel());
              report(state, t, timer, 0, backward ? 12 * n : 8 * n);
            })
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace ember::bench
