// Activation cases: sigmoid, tanh, gelu, silu and hardswish forward and backward at a ResNet-8
// feature map ("act", [128, 16, 28, 28]) and a MobileNet expanded block ("act_mobilenet",
// [32, 144, 28, 28]). A backward case runs its forward outside the timer and times backward().
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {

void register_activation_cases(const Target& target) {
  namespace F = nn::functional;
  const std::pair<const char*, UnaryOp> ops[] = {
      {"sigmoid", [](const Tensor& x) { return F::sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return F::tanh(x); }},
      {"gelu", [](const Tensor& x) { return F::gelu(x); }},
      {"silu", [](const Tensor& x) { return F::silu(x); }},
      {"hardswish", [](const Tensor& x) { return F::hardswish(x); }}};
  const std::pair<const char*, Shape> shapes[] = {{"act", {128, 16, 28, 28}}, {"act_mobilenet", {32, 144, 28, 28}}};
  for (const auto& [op_name, op] : ops) {
    for (const auto& [case_name, shape] : shapes) {
      // forward: read x, write y; backward: read dy and x (or y), write dx (float32).
      const double n = elements(shape);
      add_forward_backward_cases(std::string(op_name) + "/" + case_name, target, shape, op, 8 * n, 12 * n);
    }
  }
}

}  // namespace ember::bench
