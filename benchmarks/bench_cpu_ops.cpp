// Op cases at the tutorial network's shapes and at larger ones, forward and backward, with
// GFLOP/s (and GB/s for the memory-bound ops) as Google Benchmark counters.
#include <benchmark/benchmark.h>

#include "ember.h"
#include "kernels/cpu/gemm.h"
#include "nn/functional.h"

namespace F = ember::nn::functional;
using ember::Tensor;

namespace {

void set_rate(benchmark::State& state, double flops, double bytes) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0) state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// args: threads
void BM_sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  ember::set_num_threads(static_cast<int>(state.range(1)));
  Tensor a = ember::randn({n, n}), b = ember::randn({n, n}), c = ember::empty({n, n});
  for (auto _ : state) {
    ember::kernels::cpu::gemm<float>(false, false, n, n, n, 1.f, a.data<float>(), n, b.data<float>(), n,
                                     0.f, c.data<float>(), n);
    benchmark::DoNotOptimize(c.data<float>());
  }
  set_rate(state, 2.0 * n * n * n, 0);
}
BENCHMARK(BM_sgemm)->ArgsProduct({{1024}, {1, 2}})->Unit(benchmark::kMillisecond)->UseRealTime();

struct ConvCase { int64_t n, c, h, w, k, r; int64_t padding; };
const ConvCase kConvCases[] = {{64, 1, 28, 28, 10, 5, 0}, {64, 10, 12, 12, 20, 5, 0}, {64, 64, 56, 56, 64, 3, 1}};

double conv_flops(const ConvCase& c) {
  int64_t p = c.h + 2 * c.padding - c.r + 1, q = c.w + 2 * c.padding - c.r + 1;
  return 2.0 * c.n * c.k * p * q * c.c * c.r * c.r;
}

// args: case index, threads, pass (0 forward, 1 input gradient, 2 weight gradient)
void BM_conv2d(benchmark::State& state) {
  const ConvCase& c = kConvCases[state.range(0)];
  ember::set_num_threads(static_cast<int>(state.range(1)));
  const int64_t pass = state.range(2);
  Tensor x = ember::randn({c.n, c.c, c.h, c.w}), w = ember::randn({c.k, c.c, c.r, c.r}), b = ember::randn({c.k});
  if (pass == 1) x.requires_grad_();
  if (pass == 2) w.requires_grad_();
  Tensor y = F::conv2d(x, w, b, {.padding = c.padding});
  Tensor dy = ember::randn(y.sizes());
  for (auto _ : state) {
    Tensor out = F::conv2d(x, w, b, {.padding = c.padding});
    if (pass > 0) out.backward(dy);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetLabel(ember::detail::str("x", x.sizes(), " w", w.sizes(), pass == 0 ? " forward" : pass == 1 ? " +input grad" : " +weight grad"));
  set_rate(state, conv_flops(c) * (pass == 0 ? 1 : 2), 0);
}
BENCHMARK(BM_conv2d)->ArgsProduct({{0, 1}, {1, 2}, {0, 1, 2}})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_conv2d)->ArgsProduct({{2}, {2}, {0}})->Unit(benchmark::kMillisecond)->UseRealTime();

// args: shape index, threads, backward?
void BM_max_pool2d(benchmark::State& state) {
  const ember::Shape shapes[] = {{64, 10, 24, 24}, {64, 20, 8, 8}};
  ember::Shape shape = shapes[state.range(0)];
  ember::set_num_threads(static_cast<int>(state.range(1)));
  Tensor x = ember::randn(shape);
  if (state.range(2)) x.requires_grad_();
  Tensor dy = ember::randn({shape[0], shape[1], shape[2] / 2, shape[3] / 2});
  for (auto _ : state) {
    Tensor y = F::max_pool2d(x, 2);
    if (state.range(2)) y.backward(dy);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  set_rate(state, 0, x.numel() * 4.0 * 1.25);
}
BENCHMARK(BM_max_pool2d)->ArgsProduct({{0, 1}, {1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_relu(benchmark::State& state) {
  ember::set_num_threads(static_cast<int>(state.range(0)));
  Tensor x = ember::randn({64, 10, 12, 12});
  for (auto _ : state) benchmark::DoNotOptimize(F::relu(x).data_ptr());
  set_rate(state, 0, x.numel() * 8.0);
}
BENCHMARK(BM_relu)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_linear(benchmark::State& state) {
  ember::set_num_threads(static_cast<int>(state.range(0)));
  Tensor x = ember::randn({64, 320}).requires_grad_(), w = ember::randn({10, 320}).requires_grad_(),
         b = ember::randn({10}).requires_grad_();
  Tensor dy = ember::randn({64, 10});
  for (auto _ : state) {
    Tensor y = F::linear(x, w, b);
    y.backward(dy);
  }
  set_rate(state, 3 * 2.0 * 64 * 320 * 10, 0);
}
BENCHMARK(BM_linear)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_cross_entropy(benchmark::State& state) {
  Tensor logits = ember::randn({64, 10}).requires_grad_();
  Tensor target = ember::div(ember::arange(64.0, {.dtype = ember::kFloat32}), 7.0).to(ember::kInt64);
  for (auto _ : state) {
    Tensor loss = F::cross_entropy(logits, target);
    loss.backward();
  }
}
BENCHMARK(BM_cross_entropy)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
