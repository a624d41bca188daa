// The caching allocator under a repeating load, and out-of-memory.
#include <catch2/catch.hpp>

#include "ember/common/error.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/tensor.h"

using ember::Tensor;

TEST_CASE("a loop of same-sized allocations stops calling cudaMalloc after its first iteration") {
  auto before = ember::cuda::memory_stats(0);
  size_t after_first = 0;
  for (int step = 0; step < 10; ++step) {
    Tensor a = ember::empty({1024, 1024}, {.device = ember::Device::cuda(0)});
    Tensor b = ember::empty({64, 10}, {.device = ember::Device::cuda(0)});
    if (step == 0) after_first = ember::cuda::memory_stats(0).device_allocations;
  }
  auto after = ember::cuda::memory_stats(0);
  CHECK(after.device_allocations == after_first);
  CHECK(after.allocated == before.allocated);
  CHECK(after.peak_allocated >= before.allocated + 4 * 1024 * 1024);
  CHECK(after.cache_hits >= before.cache_hits + 18);
  ember::cuda::empty_cache();
  CHECK(ember::cuda::memory_stats(0).reserved < after.reserved);
}

TEST_CASE("an impossible allocation throws OutOfMemory naming the size, and the process carries on") {
  REQUIRE_THROWS_AS(ember::empty({int64_t{1} << 48}, {.device = ember::Device::cuda(0)}), ember::OutOfMemory);
  REQUIRE_THROWS_WITH(ember::empty({int64_t{1} << 48}, {.device = ember::Device::cuda(0)}),
                      Catch::Contains("out of memory allocating 1125899906842624 bytes"));
  Tensor small = ember::ones({4}, {.device = ember::Device::cuda(0)});
  CHECK(small.cpu().at<float>({3}) == 1.0f);
}
