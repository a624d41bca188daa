// ember-bench: op cases, end-to-end cases and the machine's ceilings, for every target present
// (CPU at each thread count; CUDA hand-written and vendor kernels when a GPU is there).
//   ember-bench --benchmark_format=json --benchmark_out=bench.json
//   ember-bench --benchmark_filter='train_step'         # one family
//   EMBER_BENCH_THREADS=1,2,4 ember-bench               # other CPU thread counts
//   ember-bench --quick                                  # short runs, no huge CPU cases
#include "benchmarks/bench_common.h"

#include <omp.h>

#include <cstdlib>
#include <sstream>

namespace ember::bench {

std::string Target::name() const {
  if (!cuda) return "cpu:t" + std::to_string(threads);
  return backend == Backend::Vendor ? "cuda:vendor" : "cuda:handwritten";
}

void Target::activate() const {
  if (cuda) {
    set_backend(backend);
  } else {
    set_num_threads(threads);
  }
}

void Target::sync() const {
  if (cuda) cuda::synchronize(0);
}

std::vector<Target> targets() {
  std::vector<Target> out;
  std::vector<int> threads{1, 2};
  if (const char* env = std::getenv("EMBER_BENCH_THREADS")) {
    threads.clear();
    std::stringstream in(env);
    for (std::string item; std::getline(in, item, ',');) {
      if (!item.empty()) threads.push_back(std::max(1, std::atoi(item.c_str())));
    }
  }
  for (int t : threads) out.push_back({.cuda = false, .threads = t});
  if (cuda::device_count() > 0) {
    out.push_back({.cuda = true, .backend = Backend::Handwritten});
    out.push_back({.cuda = true, .backend = Backend::Vendor});
  }
  return out;
}

void report(benchmark::State& state, const Target& target, const Timer& timer, double flops,
            double bytes, double items_per_iteration, const char* items_name) {
  const double seconds = timer.total_seconds();
  if (seconds <= 0 || state.iterations() == 0) return;
  const double iters = static_cast<double>(state.iterations());
  const Ceiling c = ceiling(target);
  if (flops > 0) {
    const double rate = flops * iters / seconds * 1e-9;
    state.counters["GFLOP/s"] = rate;
    if (c.gflops > 0) state.counters["of_peak_flops"] = rate / c.gflops;
  }
  if (bytes > 0) {
    const double rate = bytes * iters / seconds * 1e-9;
    state.counters["GB/s"] = rate;
    if (c.gbytes_per_s > 0) state.counters["of_peak_bw"] = rate / c.gbytes_per_s;
  }
  if (items_per_iteration > 0) state.counters[items_name] = items_per_iteration * iters / seconds;
}

benchmark::internal::Benchmark* add(const std::string& name, const Target& target, Case fn) {
  return benchmark::RegisterBenchmark((name + "/" + target.name()).c_str(),
                                      [fn, target](benchmark::State& state) {
                                        target.activate();
                                        guarded(state, [&] { fn(state, target); });
                                      })
      ->UseManualTime();
}

}  // namespace ember::bench

namespace ember::bench {
namespace {
bool g_quick = false;
}  // namespace
bool quick() { return g_quick; }
}  // namespace ember::bench

int main(int argc, char** argv) {
  // --quick (scripts/gpu-check): a short minimum time per case and no 4096^3 / 56x56 CPU cases.
  std::vector<char*> args;
  bool has_min_time = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") {
      ember::bench::g_quick = true;
      continue;
    }
    if (std::string(argv[i]).rfind("--benchmark_min_time", 0) == 0) has_min_time = true;
    args.push_back(argv[i]);
  }
  std::string min_time = "--benchmark_min_time=0.05";
  if (ember::bench::g_quick && !has_min_time) args.push_back(min_time.data());
  argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  argv = args.data();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("ember_cuda_devices", std::to_string(ember::cuda::device_count()));
  benchmark::AddCustomContext("omp_max_threads", std::to_string(omp_get_max_threads()));
  ember::bench::register_ceiling_cases();
  ember::bench::register_op_cases();
  ember::bench::register_network_cases();
  ember::bench::register_resnet8_cases();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
