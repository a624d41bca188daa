// ResNet-8 (examples/models/blocks.h, ember-fashion's network): the training step at batch 128
// with ember-fashion's optimizer (SGD Nesterov, weight decay), and inference at batch 1000, in
// samples/s, on every target. A network ember's kernels were not tuned for (issue 18, point 6).
#include "benchmarks/bench_common.h"
#include "examples/models/blocks.h"  // defines: ember::models::resnet8

namespace ember::bench {
namespace {

namespace F = nn::functional;

void resnet8_train_case(benchmark::State& state, const Target& t) {
  const int64_t batch = 128;
  manual_seed(0);
  auto model = models::resnet8();
  model->to(t.device());
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  const Tensor x = randn({batch, 1, 28, 28}).to(t.device());
  const Tensor target = div(arange(static_cast<double>(batch), {.dtype = kFloat32}), 13.0).to(kInt64).to(t.device());
  auto step = [&] {
    opt.zero_grad();
    F::cross_entropy(model->forward(x), target).backward();
    opt.step();
  };
  step();  // warm-up: momentum buffers, allocator caches
  Timer timer(state, t);
  for (auto _ : state) {
    timer.start();
    step();
    timer.stop();
  }
  report(state, t, timer, 0, 0, double(batch));
}

void resnet8_inference_case(benchmark::State& state, const Target& t) {
  const int64_t batch = 1000;
  manual_seed(0);
  auto model = models::resnet8();
  model->to(t.device());
  model->eval();
  const Tensor x = randn({batch, 1, 28, 28}).to(t.device());
  NoGradGuard no_grad;
  Tensor warm = model->forward(x);
  Timer timer(state, t);
  for (auto _ : state) {
    timer.start();
    Tensor y = model->forward(x);
    timer.stop();
  }
  report(state, t, timer, 0, 0, double(batch));
}

}  // namespace

void register_resnet8_cases() {
  for (const Target& target : targets()) {
    add("resnet8_train_step/128", target, resnet8_train_case)->Unit(benchmark::kMillisecond);
    add("resnet8_inference/1000", target, resnet8_inference_case)->Unit(benchmark::kMillisecond);
  }
}

}  // namespace ember::bench
