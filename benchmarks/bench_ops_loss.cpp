// Softmax and the classification-loss cases: softmax over contiguous rows ([128, 1000], dim 1:
// a classifier's output) and over the channels of a ResNet-style activation ([32, 64, 28, 28],
// dim 1: the strided path), forward and backward; cross_entropy with weight and label smoothing,
// forward + backward. A backward case runs its forward outside the timer and times backward() alone.
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;

}  // namespace

void register_loss_cases(const Target& target) {
  const std::pair<const char*, Shape> softmaxes[] = {{"128x1000", {128, 1000}}, {"32x64x28x28", {32, 64, 28, 28}}};
  for (const auto& [name, shape] : softmaxes) {
    // forward: read x, write y; backward: read dy and y, write dx (float32).
    const double n = elements(shape);
    add_forward_backward_cases(std::string("softmax/") + name, target, shape,
                               [](const Tensor& x) { return F::softmax(x, 1); }, 8 * n, 12 * n);
  }
  add("cross_entropy/128x10_smooth/train", target, [](benchmark::State& state, const Target& t) {
    Tensor logits = randn({128, 10}).to(t.device()).requires_grad_();
    Tensor labels = div(arange(128.0, {.dtype = kFloat32}), 13.0).to(kInt64).to(t.device());
    Tensor weight = add(div(arange(10.0, {.dtype = kFloat32}), 10.0), 0.5).to(t.device());
    Timer timer(state, t);
    for (auto _ : state) {
      timer.start();
      Tensor loss = F::cross_entropy(logits, labels, {.weight = weight, .label_smoothing = 0.1});
      loss.backward();
      timer.stop();
      logits.set_grad(Tensor());
    }
    report(state, t, timer, 0, 0);
  })->Unit(benchmark::kMicrosecond);
}

}  // namespace ember::bench
