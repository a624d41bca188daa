// The emulator itself: built-in variables, the four schedules, barriers, warp collectives,
// dynamic shared memory, and the faults it raises instead of hanging or answering wrong. Kernels
// here are written for these tests; the real ones are checked in the other test_*.cpp files.
#include "emulated_checks.h"

#include <algorithm>
#include <numeric>

#include <cuda_runtime.h>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/emulator/schedule.h"
#include "ember/kernels/cuda/launch.cuh"

namespace emu = ember::emu;
using Catch::Matchers::Contains;

namespace {

const emu::ScheduleSetting kSchedules[] = {
    {emu::Schedule::Forward}, {emu::Schedule::Reverse}, {emu::Schedule::Random, 7}, {emu::Schedule::RunAhead}};

// Runs `body` under each schedule, then returns to the environment's.
template <class Body>
void for_each_schedule(Body&& body) {
  for (const auto& s : kSchedules) {
    emu::set_schedule(s);
    DYNAMIC_SECTION("schedule " << emu::to_string(s)) { body(s); }
  }
  emu::set_schedule(std::nullopt);
}

__global__ void write_indices(uint32_t* out) {
  const uint32_t block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const uint32_t thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const uint32_t per_block = blockDim.x * blockDim.y * blockDim.z;
  out[block * per_block + thread] = block * per_block + thread + 1;
}

// The order in which threads pass two points, before and after a barrier.
int g_clock = 0;
__global__ void record_order(int* before, int* after) {
  before[threadIdx.x] = g_clock++;
  __syncthreads();
  after[threadIdx.x] = g_clock++;
}

// Each thread reads its right neighbour's value: correct only with the barrier.
template <bool kBarrier>
__global__ void rotate_through_shared(int* out) {
  __shared__ int slots[64];
  const int tid = threadIdx.x, n = blockDim.x;
  slots[tid] = 1000 * static_cast<int>(blockIdx.x) + tid;
  if constexpr (kBarrier) __syncthreads();
  out[blockIdx.x * n + tid] = slots[(tid + 1) % n];
}

__global__ void warp_sum(const float* in, float* out) {
  float v = in[threadIdx.x];
  for (int delta = 16; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
  out[threadIdx.x] = v;
}

__global__ void shuffles_of_width_8(int* idx, int* up, int* down, int* ballot) {
  const int lane = threadIdx.x;
  idx[lane] = __shfl_sync(0xffffffffu, lane, 3, 8);
  up[lane] = __shfl_up_sync(0xffffffffu, lane, 2, 8);
  down[lane] = __shfl_down_sync(0xffffffffu, lane, 2, 8);
  ballot[lane] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0)) + __any_sync(0xffffffffu, lane == 5) +
                 __all_sync(0xffffffffu, lane < 32);
}

__global__ void read_dynamic_shared(uint32_t* out) {
  EMBER_DYNAMIC_SHARED(uint32_t, words);
  if (blockIdx.x == 0) {
    out[threadIdx.x] = words[threadIdx.x];  // never written: the poison
    words[threadIdx.x] = 7;
  } else {
    out[blockDim.x + threadIdx.x] = words[threadIdx.x];  // a fresh block sees the poison again
  }
}

__global__ void barrier_in_half_the_block(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
    out[threadIdx.x] = 1;
  }
}

__global__ void two_different_barriers(int* out) {
  if (threadIdx.x % 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void shuffle_in_half_the_warp(float* out) {
  float v = out[threadIdx.x];
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void shuffle_against_barrier(float* out) {
  float v = out[threadIdx.x];
  if (threadIdx.x == 0) __syncthreads();
  else v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

// UBSan's own alignment check (on in the sanitizer build) is off here, to see the emulator's.
__attribute__((no_sanitize("alignment"))) __global__ void load_float4(const float* x, float* y) {
  const float4 v = *reinterpret_cast<const float4*>(x);
  y[threadIdx.x] = v.x;
}

__attribute__((no_sanitize("alignment"))) __global__ void store_float4(float* y) {
  *reinterpret_cast<float4*>(y) = make_float4(1, 2, 3, 4);
}

__global__ void shuffle_without_the_caller(float* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xfffffffeu, out[threadIdx.x], 1);
}

__global__ void noop(int*) {}

// A launch as kernels/cuda/*.cu write them: the check names the op.
#define LAUNCH_CHECKED(kernel, grid, block, shared, out) \
  [&] {                                                  \
    EMBER_LAUNCH(grid, block, shared, nullptr, kernel)(out); \
    EMBER_CUDA_LAUNCH_CHECK("emulator_test_op");         \
  }()

}  // namespace

TEST_CASE("emulated threads see their own threadIdx and blockIdx, each exactly once", "[cuda-emulated][emulator]") {
  for_each_schedule([](const emu::ScheduleSetting&) {
    const dim3 grid(3, 2, 2), block(4, 3, 2);
    std::vector<uint32_t> out(12 * 24, 0);
    EMBER_LAUNCH(grid, block, 0, nullptr, write_indices)(out.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    for (uint32_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == i + 1);
  });
}

TEST_CASE("each schedule runs the threads of a block in its own order", "[cuda-emulated][emulator]") {
  constexpr int n = 64;
  auto orders = [&](const emu::ScheduleSetting& s) {
    emu::set_schedule(s);
    std::vector<int> before(n), after(n);
    g_clock = 0;
    EMBER_LAUNCH(1, n, 0, nullptr, record_order)(before.data(), after.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    emu::set_schedule(std::nullopt);
    return std::make_pair(before, after);
  };
  std::vector<int> ascending(n);
  std::iota(ascending.begin(), ascending.end(), 0);
  auto [forward_before, forward_after] = orders({emu::Schedule::Forward});
  CHECK(forward_before == ascending);
  std::vector<int> descending(ascending.rbegin(), ascending.rend());
  auto [reverse_before, reverse_after] = orders({emu::Schedule::Reverse});
  CHECK(reverse_before == descending);
  // Random: a permutation, neither order above, the same for the same seed, another for another.
  auto [random_before, random_after] = orders({emu::Schedule::Random, 3});
  CHECK(std::is_permutation(random_before.begin(), random_before.end(), ascending.begin()));
  CHECK(random_before != ascending);
  CHECK(random_before != descending);
  CHECK(orders({emu::Schedule::Random, 3}).first == random_before);
  CHECK(orders({emu::Schedule::Random, 4}).first != random_before);
  // Run-ahead: the warp that completes the barrier (the last one, here) passes it first.
  auto [ahead_before, ahead_after] = orders({emu::Schedule::RunAhead});
  CHECK(ahead_before == ascending);
  for (int t = 32; t < 64; ++t) CHECK(ahead_after[t] == n + (t - 32));
  for (int t = 0; t < 32; ++t) CHECK(ahead_after[t] == n + 32 + t);
}

TEST_CASE("a barrier orders shared-memory writes before reads; without it every schedule sees the race",
          "[cuda-emulated][emulator]") {
  for_each_schedule([](const emu::ScheduleSetting&) {
    const int blocks = 3, n = 64;
    std::vector<int> out(blocks * n), want(blocks * n);
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < n; ++t) want[b * n + t] = 1000 * b + (t + 1) % n;
    }
    EMBER_LAUNCH(blocks, n, 0, nullptr, rotate_through_shared<true>)(out.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    CHECK(out == want);
    EMBER_LAUNCH(blocks, n, 0, nullptr, rotate_through_shared<false>)(out.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    CHECK(out != want);
  });
}

TEST_CASE("warp shuffles, ballots and votes follow CUDA's lane rules", "[cuda-emulated][emulator]") {
  for_each_schedule([](const emu::ScheduleSetting&) {
    std::vector<float> in(32), sums(32);
    std::iota(in.begin(), in.end(), 1.0f);
    EMBER_LAUNCH(1, 32, 0, nullptr, warp_sum)(in.data(), sums.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    for (float s : sums) CHECK(s == 528.0f);

    std::vector<int> idx(32), up(32), down(32), ballot(32);
    EMBER_LAUNCH(1, 32, 0, nullptr, shuffles_of_width_8)(idx.data(), up.data(), down.data(), ballot.data());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    unsigned votes = 0;
    for (int l = 0; l < 32; l += 3) votes |= 1u << l;
    for (int l = 0; l < 32; ++l) {
      const int segment = l / 8 * 8;
      CHECK(idx[l] == segment + 3);
      CHECK(up[l] == (l - 2 >= segment ? l - 2 : l));
      CHECK(down[l] == (l + 2 < segment + 8 ? l + 2 : l));
      CHECK(ballot[l] == static_cast<int>(votes) + 2);
    }
  });
}

TEST_CASE("dynamic shared memory starts poisoned in every block", "[cuda-emulated][emulator]") {
  std::vector<uint32_t> out(64, 0);
  EMBER_LAUNCH(2, 32, 32 * sizeof(uint32_t), nullptr, read_dynamic_shared)(out.data());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (uint32_t v : out) CHECK(v == 0xffffffffu);
}

TEST_CASE("a barrier reached by only part of a block is a launch failure naming kernel and barrier",
          "[cuda-emulated][emulator]") {
  for_each_schedule([](const emu::ScheduleSetting&) {
    std::vector<int> out(64);
    REQUIRE_THROWS_WITH(LAUNCH_CHECKED(barrier_in_half_the_block, 2, 64, 0, out.data()),
                        Contains("emulator_test_op: CUDA kernel launch failed: unspecified launch failure") &&
                            Contains("kernel barrier_in_half_the_block (launched at") &&
                            Contains("test_emulator.cpp:") && Contains("reached by 16 of 64 threads") &&
                            Contains("a barrier in divergent code"));
    REQUIRE_THROWS_WITH(LAUNCH_CHECKED(two_different_barriers, 1, 64, 0, out.data()),
                        Contains("wait at different barriers"));
    // The emulator is usable again after a fault.
    LAUNCH_CHECKED(noop, 1, 64, 0, out.data());
  });
}

TEST_CASE("a warp collective whose lanes cannot all arrive is reported as the deadlock it is",
          "[cuda-emulated][emulator]") {
  for_each_schedule([](const emu::ScheduleSetting&) {
    std::vector<float> out(32, 1.0f);
    EMBER_LAUNCH(1, 32, 0, nullptr, shuffle_in_half_the_warp)(out.data());
    const cudaError_t half = cudaGetLastError();
    CHECK(half == cudaErrorLaunchFailure);
    CHECK_THAT(cudaGetErrorString(half), Contains("__shfl_xor_sync at") && Contains("returned without reaching it"));
    EMBER_LAUNCH(1, 32, 0, nullptr, shuffle_against_barrier)(out.data());
    const cudaError_t crossed = cudaGetLastError();
    CHECK(crossed == cudaErrorLaunchFailure);
    CHECK_THAT(cudaGetErrorString(crossed), Contains("which waits at __syncthreads at"));
    EMBER_LAUNCH(1, 32, 0, nullptr, shuffle_without_the_caller)(out.data());
    const cudaError_t outside = cudaGetLastError();
    CHECK(outside == cudaErrorLaunchFailure);
    // Lane 0 faults on arrival, unless lanes 1..31 complete the shuffle first and lane 1 reads it.
    CHECK_THAT(cudaGetErrorString(outside), Contains("the calling lane 0 is not in its mask 0xfffffffe") ||
                                                Contains("lane 1 reads lane 0, which is not in mask 0xfffffffe"));
  });
}

TEST_CASE("a misaligned float4 load or store is the misaligned-address fault it is on a GPU",
          "[cuda-emulated][emulator]") {
  alignas(16) float buffer[12] = {};
  EMBER_LAUNCH(1, 1, 0, nullptr, load_float4)(buffer, buffer + 8);
  CHECK(cudaGetLastError() == cudaSuccess);
  EMBER_LAUNCH(1, 1, 0, nullptr, load_float4)(buffer + 1, buffer + 8);
  const cudaError_t load = cudaGetLastError();
  CHECK(load == cudaErrorMisalignedAddress);
  CHECK_THAT(cudaGetErrorString(load), Contains("misaligned address [ember CUDA emulator: kernel load_float4") &&
                                           Contains("a float4 load from") && Contains("16-byte alignment") &&
                                           Contains("test_emulator.cpp:"));
  EMBER_LAUNCH(1, 1, 0, nullptr, store_float4)(buffer + 2);
  const cudaError_t store = cudaGetLastError();
  CHECK(store == cudaErrorMisalignedAddress);
  CHECK_THAT(cudaGetErrorString(store), Contains("a float4 store to"));
}

TEST_CASE("launch configurations a GPU refuses are refused", "[cuda-emulated][emulator]") {
  std::vector<int> out(1);
  REQUIRE_THROWS_WITH(LAUNCH_CHECKED(noop, 1, 0, 0, out.data()),
                      Contains("invalid configuration argument") && Contains("block (0, 1, 1)"));
  REQUIRE_THROWS_WITH(LAUNCH_CHECKED(noop, 1, dim3(64, 32), 0, out.data()),
                      Contains("has 2048 threads, more than 1024"));
  REQUIRE_THROWS_WITH(LAUNCH_CHECKED(noop, dim3(1, 70000), 32, 0, out.data()), Contains("grid (1, 70000, 1)"));
  REQUIRE_THROWS_WITH(LAUNCH_CHECKED(noop, 1, 32, 64 << 10, out.data()),
                      Contains("invalid argument") && Contains("65536 bytes of dynamic shared memory"));
  CHECK(cudaGetLastError() == cudaSuccess);  // the check consumed each error
}

TEST_CASE("EMBER_EMU_SCHEDULE names are parsed, and a bad one is named", "[cuda-emulated][emulator]") {
  CHECK(emu::parse_schedule("reverse").order == emu::Schedule::Reverse);
  CHECK(emu::parse_schedule("random:42").seed == 42);
  CHECK(emu::to_string(emu::parse_schedule("run-ahead")) == "run-ahead");
  CHECK_THROWS_WITH(emu::parse_schedule("sideways"), Contains("got 'sideways'"));
  CHECK_THROWS_WITH(emu::parse_schedule("random:x"), Contains("random:SEED"));
}
