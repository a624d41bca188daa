// The emulated devices' memory: separate arenas per device, of the size EMBER_EMULATED_MEMORY
// gives (256M in this test's ctest), so that cudaMalloc runs out as on a GPU and the caching
// allocator's free-and-retry and ember::OutOfMemory run for real; and copies that a GPU would
// refuse are refused, saying why.
#include <catch2/catch.hpp>

#include <vector>

#include <cuda_runtime_api.h>

#include "ember/common/error.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/tensor.h"

using ember::Tensor;

namespace {
const ember::Device cuda0 = ember::Device::cuda(0);
}

TEST_CASE("each emulated device has its own memory, of the size set, and cudaMalloc runs out") {
  REQUIRE(ember::cuda::device_count() == 2);
  size_t free0 = 0, total0 = 0;
  REQUIRE(cudaMemGetInfo(&free0, &total0) == cudaSuccess);
  CHECK(total0 == (size_t{256} << 20));
  std::vector<void*> blocks;
  void* p = nullptr;
  cudaError_t status = cudaSuccess;
  while ((status = cudaMalloc(&p, 32 << 20)) == cudaSuccess) blocks.push_back(p);
  CHECK(status == cudaErrorMemoryAllocation);
  CHECK(blocks.size() == 7);  // 8 x 32 MiB would leave no room for the allocations' gaps
  CHECK_THAT(cudaGetErrorString(cudaGetLastError()), Catch::Contains("cuda:0 has") && Catch::Contains("bytes free of 268435456"));
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaMalloc(&p, 32 << 20) == cudaSuccess);  // cuda:1's memory is its own
  CHECK(cudaFree(p) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  for (void* b : blocks) CHECK(cudaFree(b) == cudaSuccess);
  CHECK(cudaFree(blocks[0]) == cudaErrorInvalidValue);  // freed twice
  cudaGetLastError();
}

TEST_CASE("the caching allocator empties its cache and retries when the device is full, then throws OutOfMemory") {
  ember::cuda::empty_cache();
  {
    std::vector<Tensor> cached;
    for (int i = 0; i < 5; ++i) cached.push_back(ember::empty({40 << 18}, {.device = cuda0}));  // 5 x 40 MiB
  }  // freed into the cache: 200 MiB reserved, none allocated
  const auto before = ember::cuda::memory_stats(0);
  CHECK(before.reserved >= (size_t{200} << 20));
  Tensor big = ember::empty({120 << 18}, {.device = cuda0});  // 120 MiB fits only once the cache is gone
  const auto after = ember::cuda::memory_stats(0);
  CHECK(after.device_allocations == before.device_allocations + 1);
  CHECK(after.reserved < before.reserved);
  REQUIRE_THROWS_AS(ember::empty({200 << 18}, {.device = cuda0}), ember::OutOfMemory);
  REQUIRE_THROWS_WITH(ember::empty({200 << 18}, {.device = cuda0}), Catch::Contains("out of memory allocating 209715200 bytes"));
  big = Tensor();
  Tensor small = ember::full({4}, 3.0, {.device = cuda0});  // the process carries on
  CHECK(small.cpu().at<float>({2}) == 3.0f);
}

TEST_CASE("copies and fills that overrun their allocation or run the wrong way are refused") {
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 1000) == cudaSuccess);
  std::vector<char> host(2000);
  CHECK(cudaMemcpyAsync(d, host.data(), 1001, cudaMemcpyHostToDevice, nullptr) == cudaErrorInvalidValue);
  CHECK_THAT(cudaGetErrorString(cudaGetLastError()), Catch::Contains("runs past the end of its 1000-byte allocation"));
  CHECK(cudaMemsetAsync(static_cast<char*>(d) + 500, 0, 501, nullptr) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaMemcpyAsync(host.data(), d, 100, cudaMemcpyHostToDevice, nullptr) == cudaErrorInvalidMemcpyDirection);
  CHECK_THAT(cudaGetErrorString(cudaGetLastError()),
             Catch::Contains("cudaMemcpyHostToDevice from memory of cuda:0 to pageable host memory"));
  CHECK(cudaMemsetAsync(host.data(), 0, 10, nullptr) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaMemcpyPeerAsync(d, 1, host.data(), 0, 10, nullptr) == cudaErrorInvalidValue);
  cudaGetLastError();
  REQUIRE(cudaFree(d) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 0, 10, nullptr) == cudaErrorInvalidValue);  // freed
  CHECK_THAT(cudaGetErrorString(cudaGetLastError()), Catch::Contains("in no live allocation"));
}
