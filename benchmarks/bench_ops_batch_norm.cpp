// ember-bench cases for BatchNorm2d: the training forward (statistics, running-stat update,
// normalisation), the backward alone (input, weight and bias gradients) and the evaluation forward,
// at the ResNet-8 shapes ([128, 16, 28, 28], [128, 64, 7, 7]) and a ResNet stage ([32, 64, 56, 56]).
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"

namespace ember::bench {

void register_batch_norm_cases(const Target& target) {
  enum class Pass { TrainForward, Backward, EvalForward };
  const std::pair<const char*, Shape> shapes[] = {
      {"resnet8_c16", {128, 16, 28, 28}}, {"resnet8_c64", {128, 64, 7, 7}}, {"resnet_56", {32, 64, 56, 56}}};
  const std::pair<const char*, Pass> passes[] = {
      {"train_forward", Pass::TrainForward}, {"backward", Pass::Backward}, {"eval_forward", Pass::EvalForward}};
  for (const auto& [name, shape] : shapes) {
    for (const auto& [pass_name, pass] : passes) {
      add(std::string("batch_norm2d/") + name + "/" + pass_name, target,
          [shape = shape, pass = pass](benchmark::State& state, const Target& t) {
            guarded(state, [&] {
              nn::BatchNorm2d bn(shape[1]);
              bn.to(t.device());
              Tensor x = randn(shape).to(t.device());
              Tensor dy = randn(shape).to(t.device());
              if (pass == Pass::Backward) x.requires_grad_();
              if (pass == Pass::EvalForward) bn.eval();
              Timer timer(state, t);
              auto forward = [&] { return bn(x); };
              if (pass == Pass::Backward) {
                time_backward(state, timer, forward, dy, {x}, [&] { bn.zero_grad(); });
              } else {
                NoGradGuard no_grad;  // as the peers: no graph for the timed forward
                time_forward(state, timer, forward);
              }
              // Bytes per element: training forward reads x twice and writes y; backward reads
              // dy and x twice and writes dx; evaluation reads x and writes y.
              const double n = double(x.numel()) * sizeof(float);
              report(state, t, timer, 0, pass == Pass::TrainForward ? 3 * n : pass == Pass::Backward ? 5 * n : 2 * n);
            });
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace ember::bench
