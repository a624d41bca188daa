// The machine's ceilings, measured here rather than taken from a data sheet: CPU FP32 FMA peak
// and copy bandwidth per thread count, GPU SGEMM (cuBLAS) rate and device copy bandwidth. Each
// is also a case of its own ("ceiling/...") so the JSON carries the numbers the fractions use.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "benchmarks/bench_common.h"
#include "ember/kernels/cpu/gemm.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A round trip above this means the two threads' cores share no L3 (50-110 ns when they do,
// 310-350 when they do not, on these machines).
constexpr double kFarRoundTripNs = 150;

// 16 independent FMA chains (more than latency x ports), `iters` rounds; returns FLOPs done.
__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t iters, float* sink) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  *sink = _mm512_reduce_add_ps(s);
  return double(iters) * 16 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t iters, float* sink) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * float(i));
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  *sink = lanes[0];
  return double(iters) * 12 * 8 * 2;
}

double fma_loop(int64_t iters, float* sink) {
  if (__builtin_cpu_supports("avx512f")) return fma_loop_avx512(iters, sink);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return fma_loop_avx2(iters, sink);
  float a = 1.0f;
  for (int64_t it = 0; it < iters; ++it) a = a * 0.9999999f + 1e-7f;
  *sink = a;
  return double(iters) * 2;
}

// GFLOP/s of one run of the FMA loop on `threads` threads, `iters` rounds each; *seconds gets
// its duration.
double fma_rate(int threads, int64_t iters, double* seconds) {
  float sinks[64] = {};
  double flops = 0;
  const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
  flops += fma_loop(iters, &sinks[omp_get_thread_num() % 64]);
  *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  benchmark::DoNotOptimize(sinks);
  return flops / *seconds * 1e-9;
}

// Best of 5 short runs: the machine is shared, and a ceiling is the best it can do.
double measure_cpu_peak(int threads) {
  double best = 0, seconds = 0;
  for (int rep = 0; rep < 5; ++rep) best = std::max(best, fma_rate(threads, 4'000'000, &seconds));
  return best;
}

double measure_cpu_copy(int threads) {
  const size_t n = size_t(64) << 20;  // bytes per buffer
  std::unique_ptr<char[]> a(new char[n]), b(new char[n]);
  std::memset(a.get(), 1, n);
  std::memset(b.get(), 0, n);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const size_t lo = n * t / nt, hi = n * (t + 1) / nt;
      std::memcpy(b.get() + lo, a.get() + lo, hi - lo);
    }
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * double(n) / s * 1e-9);
  }
  benchmark::DoNotOptimize(b.get());
  return best;
}

// cuBLAS SGEMM at 4096^3 through ember::matmul with the vendor backend; best of 3.
double measure_cuda_sgemm() {
  BackendGuard vendor(Backend::Vendor);
  const int64_t n = 4096;
  Tensor a = randn({n, n}).to(Device::cuda(0)), b = randn({n, n}).to(Device::cuda(0));
  Tensor c = matmul(a, b);  // warm-up: handles, allocator
  cuda::synchronize(0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    c = matmul(a, b);
    cuda::synchronize(0);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * double(n) * n * n / s * 1e-9);
  }
  return best;
}

double measure_cuda_copy() {
  const int64_t n = int64_t(64) << 20;  // floats: 256 MiB
  Tensor a = zeros({n}, {.device = Device::cuda(0)}), b = zeros({n}, {.device = Device::cuda(0)});
  b.copy_(a);
  cuda::synchronize(0);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
    b.copy_(a);
    cuda::synchronize(0);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 2.0 * 4.0 * double(n) / s * 1e-9);
  }
  return best;
}

// Nanoseconds for one cache line to go from one thread of a 2-thread team to the other and back
// (the least of 5 runs of 20,000 round trips: the placement, without the
// hypervisor's bursts), or 0 when the team has fewer threads. On these
// virtual machines it is 50-110 ns when the host runs both vCPUs on cores that share an L3 and
// about 320 ns when they do not, and the host changes its choice every few minutes; the
// tutorial's 2-thread step moves with it (1.5 ms against 2.5 ms at batch 64), so every 2-thread
// number needs it beside it (docs/performance.md, "Two threads on the tutorial network").
double measure_core_round_trip() {
  constexpr int kTrips = 20'000, kRuns = 5;
  struct alignas(64) Line {
    std::atomic<int> value{0};
  };
  Line line;
  std::vector<double> runs;
  bool two = true;
  for (int run = 0; run < kRuns && two; ++run) {
    line.value.store(0);
    double seconds = 0;
#pragma omp parallel num_threads(2)
    {
      if (omp_get_num_threads() != 2) {
#pragma omp single
        two = false;
      } else if (omp_get_thread_num() == 0) {
        const auto t0 = Clock::now();
        for (int i = 0; i < kTrips; ++i) {
          line.value.store(1, std::memory_order_release);
          while (line.value.load(std::memory_order_acquire) != 0) {
          }
        }
        seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      } else {
        for (int i = 0; i < kTrips; ++i) {
          while (line.value.load(std::memory_order_acquire) != 1) {
          }
          line.value.store(0, std::memory_order_release);
        }
      }
    }
    runs.push_back(seconds / kTrips * 1e9);
  }
  if (!two) return 0;
  return *std::min_element(runs.begin(), runs.end());
}

}  // namespace

double cpu_peak_now(int threads, double seconds) {
  int64_t iters = 100'000;
  double elapsed = 0;
  fma_rate(threads, iters, &elapsed);
  // Size the measured run from that probe so that it lasts about `seconds`.
  iters = std::max<int64_t>(iters, int64_t(double(iters) * seconds / std::max(elapsed, 1e-6)));
  return fma_rate(threads, iters, &elapsed);
}

Ceiling ceiling(const Target& target) {
  static std::map<std::string, Ceiling> cache;
  const std::string key = target.cuda ? "cuda" : target.name();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Ceiling c;
  if (target.cuda) {
    try {
      c.gflops = measure_cuda_sgemm();
    } catch (const std::exception&) {
      c.gflops = 0;  // no vendor matmul yet: no fraction for GPU compute
    }
    try {
      c.gbytes_per_s = measure_cuda_copy();
    } catch (const std::exception&) {
      c.gbytes_per_s = 0;
    }
  } else {
    c.gflops = measure_cpu_peak(target.threads);
    c.gbytes_per_s = measure_cpu_copy(target.threads);
  }
  cache[key] = c;
  return c;
}

void register_ceiling_cases() {
  for (const Target& target : targets()) {
    add("ceiling/fp32_peak", target, [](benchmark::State& state, const Target& t) {
      const Ceiling c = ceiling(t);
      for (auto _ : state) state.SetIterationTime(1e-3);
      state.counters["GFLOP/s"] = c.gflops;
      state.counters["GB/s"] = c.gbytes_per_s;
      state.SetLabel(t.cuda ? "GFLOP/s: cuBLAS SGEMM 4096^3; GB/s: device copy 256 MiB"
                            : "GFLOP/s: FMA loop; GB/s: memcpy 64 MiB (read + write)");
    })->Iterations(1);
    if (target.cuda || target.threads < 2) continue;
    add("ceiling/core_round_trip", target, [](benchmark::State& state, const Target&) {
      const double ns = measure_core_round_trip();
      for (auto _ : state) state.SetIterationTime(1e-3);
      state.counters["ns"] = ns;
      state.SetLabel(ns > kFarRoundTripNs ? "ns: cache-line round trip between the 2 threads; no shared L3"
                                          : "ns: cache-line round trip between the 2 threads");
    })->Iterations(1);
  }
}

}  // namespace ember::bench
