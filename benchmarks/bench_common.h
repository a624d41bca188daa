// Shared pieces of ember-bench: where a case runs (CPU at a thread count, or CUDA with one of the
// two kernel backends), a manual timer that waits for the GPU, the machine ceilings the suite
// measures itself, and the counters every case reports.
// defines: ember::bench::Target, targets, Timer, ceiling, report, time_forward, time_backward,
//          add_forward_backward_cases
//
// Names: every case is "<op>/<case>/<target>", target "cpu:t1", "cpu:t2", "cuda:handwritten" or
// "cuda:vendor". scripts/bench.py matches "<op>/<case>" against the PyTorch peers' names.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::bench {

struct Target {
  bool cuda = false;
  int threads = 1;                          // CPU only
  Backend backend = Backend::Handwritten;   // CUDA only
  std::string name() const;                 // "cpu:t2", "cuda:vendor", ...
  Device device() const { return cuda ? Device::cuda(0) : Device::cpu(); }
  // Sets the thread count or the backend this target runs with.
  void activate() const;
  // Waits for the device (ember::cuda::synchronize) on a CUDA target; nothing on the CPU.
  void sync() const;
};

// CPU at 1 and 2 threads (or EMBER_BENCH_THREADS="1,2,4"), then both CUDA backends when
// ember::cuda::device_count() > 0.
std::vector<Target> targets();

// Measures only what runs between start() and stop(), with the device synchronised on both
// ends, and hands it to Google Benchmark (the cases use UseManualTime()).
class Timer {
 public:
  Timer(benchmark::State& state, const Target& target) : state_(state), target_(target) {}
  void start() {
    target_.sync();
    begin_ = std::chrono::steady_clock::now();
  }
  void stop() {
    target_.sync();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
    state_.SetIterationTime(s);
    total_ += s;
  }
  double total_seconds() const { return total_; }

 private:
  benchmark::State& state_;
  const Target& target_;
  std::chrono::steady_clock::time_point begin_;
  double total_ = 0;
};

// The machine's ceilings, measured by the suite on first use and cached:
//   CPU: FP32 FMA peak in GFLOP/s (an FMA loop over independent AVX-512 / AVX2 accumulators on
//   `threads` threads) and copy bandwidth in GB/s (bytes read + written, a 64 MiB buffer).
//   CUDA: "FP32 peak" is the vendor (cuBLAS) SGEMM rate at 4096^3, the best a real kernel
//   reaches; bandwidth is a device-to-device copy of 256 MiB through ember's copy kernel.
struct Ceiling {
  double gflops = 0, gbytes_per_s = 0;
};
Ceiling ceiling(const Target& target);

// The CPU FP32 FMA rate in GFLOP/s right now: the FMA loop on `threads` threads for about
// `seconds`. For ratios taken side by side with a kernel (see sgemm's of_peak_paired).
double cpu_peak_now(int threads, double seconds);

// Sets GFLOP/s, GB/s and their fractions of the target's ceiling (flops and bytes per
// iteration; either may be 0), plus items/s when items_per_iteration > 0.
void report(benchmark::State& state, const Target& target, const Timer& timer, double flops,
            double bytes, double items_per_iteration = 0, const char* items_name = "samples/s");

// Registers fn(state, target) as "<name>/<target>" for every target, with manual time.
using Case = std::function<void(benchmark::State&, const Target&)>;
benchmark::internal::Benchmark* add(const std::string& name, const Target& target, Case fn);

// Runs body(); an ember::Error (a CUDA op not written yet, out of memory) marks the case as
// skipped with its message instead of aborting the whole suite.
template <class Body>
void guarded(benchmark::State& state, Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The two halves of a forward / backward case pair, one timed pass per state iteration.
// time_forward times forward() alone (the Tensor it returns is freed after the timer stops).
template <class Forward>
void time_forward(benchmark::State& state, Timer& timer, Forward&& forward) {
  for (auto _ : state) {
    timer.start();
    Tensor y = forward();
    timer.stop();
  }
}

// time_backward runs forward() outside the timer and times y.backward(dy) alone. Gradients
// accumulate into .grad, so after each pass it drops the gradients of `leaves` and calls
// also_clear() when given (a module's zero_grad()): every iteration then does the same work.
template <class Forward>
void time_backward(benchmark::State& state, Timer& timer, Forward&& forward, const Tensor& dy,
                   std::vector<Tensor> leaves, const std::function<void()>& also_clear = nullptr) {
  for (auto _ : state) {
    Tensor y = forward();
    timer.start();
    y.backward(dy);
    timer.stop();
    for (Tensor& leaf : leaves) leaf.set_grad(Tensor());
    if (also_clear) also_clear();
  }
}

// The element count of a shape, as a double for the byte counts passed to report().
inline double elements(const Shape& shape) {
  double n = 1;
  for (int64_t d : shape) n *= double(d);
  return n;
}

// Registers "<name>/forward" and "<name>/backward" (in microseconds) for a one-input op:
// x = randn(shape) on the target's device; forward times op(x), backward times
// op(x).backward(dy) alone (dy random, op(x)'s shape). Reports bytes_forward or bytes_backward
// per iteration.
using UnaryOp = std::function<Tensor(const Tensor&)>;
void add_forward_backward_cases(const std::string& name, const Target& target, const Shape& shape, UnaryOp op,
                                double bytes_forward, double bytes_backward);

// True under --quick: cases keep their sizes but the 4096^3 SGEMM and the 56x56 conv are not
// registered on the CPU (seconds per iteration there).
bool quick();

void register_ceiling_cases();
void register_op_cases();
void register_shape_cases(const Target& target);  // bench_ops_shape.cpp: cat
// benchmarks/bench_ops_tensor.cpp: clamp, var, masked_fill, dropout2d (from register_op_cases).
void register_tensor_op_cases(const Target& target);
void register_conv_groups_cases(const Target& target);  // bench_ops_conv_groups.cpp
void register_network_cases();
void register_resnet8_cases();  // bench_resnet8.cpp: ResNet-8's training step and inference
// benchmarks/bench_ops_activation.cpp: sigmoid, tanh, gelu, silu, hardswish (called by register_op_cases).
void register_activation_cases(const Target& target);
// benchmarks/bench_ops_loss.cpp: softmax and cross_entropy with options (from register_op_cases).
void register_loss_cases(const Target& target);
// BatchNorm2d cases (bench_ops_batch_norm.cpp), called from register_op_cases.
void register_batch_norm_cases(const Target& target);
void register_layer_norm_cases(const Target& target);  // bench_ops_layer_norm.cpp
void register_index_cases(const Target& target);       // bench_ops_index.cpp: embedding, index_select, gather
void register_conv_transpose_cases(const Target& target);  // bench_ops_conv_transpose.cpp
void register_pool_cases(const Target& target);  // benchmarks/bench_ops_pool.cpp

}  // namespace ember::bench
