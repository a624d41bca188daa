// End-to-end cases: the tutorial network's training step (batch 64 and 256) and inference at
// batch 1000, reported as samples/s; and the SGD update over the network's parameters.
#include <benchmark/benchmark.h>

#include "ember.h"
#include "examples/mnist/net.h"  // defines: ember::examples::Net

namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember::Tensor;
using ember::examples::Net;

namespace {

Tensor labels(int64_t n) {
  return ember::div(ember::arange(static_cast<double>(n), {.dtype = ember::kFloat32}), n / 10.0 + 1).to(ember::kInt64);
}

// args: batch, threads
void BM_train_step(benchmark::State& state) {
  const int64_t batch = state.range(0);
  ember::set_num_threads(static_cast<int>(state.range(1)));
  ember::manual_seed(0);
  Net model;
  ember::optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.5});
  Tensor x = ember::randn({batch, 1, 28, 28}), target = labels(batch);
  for (auto _ : state) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(x), target);
    loss.backward();
    opt.step();
  }
  state.counters["samples/s"] = benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_step)->ArgsProduct({{64, 256}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_inference(benchmark::State& state) {
  ember::set_num_threads(static_cast<int>(state.range(0)));
  ember::manual_seed(0);
  Net model;
  model.eval();
  Tensor x = ember::randn({1000, 1, 28, 28});
  ember::NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(model.forward(x).data_ptr());
  state.counters["samples/s"] = benchmark::Counter(1000.0, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_inference)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_sgd_update(benchmark::State& state) {
  ember::manual_seed(0);
  Net model;
  ember::optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.5});
  int64_t elements = 0;
  for (Tensor& p : model.parameters()) {
    p.set_grad(ember::randn(p.sizes()));
    elements += p.numel();
  }
  for (auto _ : state) opt.step();
  state.counters["GB/s"] = benchmark::Counter(elements * 4.0 * 5 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_sgd_update)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
