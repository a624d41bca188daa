// The CPU block cache (Note [the CPU block cache] in core/cpu_allocator.cpp): a freed block comes
// back for the next request of its size, and only of its size; small blocks, one thread,
// sanitizer builds and empty_cache() leave it to malloc; alignment and the counters hold under
// concurrent use. Each test runs ember on 2 threads, as the cache needs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "ember/core/cpu_allocator.h"
#include "ember/core/tensor.h"
#include "ember/core/threading.h"

namespace {

constexpr int64_t kLarge = 1 << 16;  // floats: 256 KiB, above the cache's smallest block

uintptr_t address(const ember::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

// ember on `threads` threads for the guard's lifetime.
struct ThreadsGuard {
  int saved = ember::get_num_threads();
  explicit ThreadsGuard(int threads) { ember::set_num_threads(threads); }
  ~ThreadsGuard() { ember::set_num_threads(saved); }
};

}  // namespace

TEST_CASE("a freed CPU block is handed out again for the next request of its exact size") {
  ThreadsGuard two(2);
  ember::cpu::empty_cache();
  const auto before = ember::cpu::memory_stats();
  uintptr_t first = 0;
  size_t allocations_after_first = 0;
  for (int step = 0; step < 5; ++step) {
    ember::Tensor a = ember::empty({kLarge});
    ember::Tensor b = ember::empty({kLarge});  // a second live block of the same size
    CHECK(address(a) % 64 == 0);
    CHECK(address(b) % 64 == 0);
    CHECK(address(a) != address(b));
    if (step == 0) {
      first = address(a);
      allocations_after_first = ember::cpu::memory_stats().allocations;
    } else if (before.caching) {
      // The locals die b first, then a: a's block was freed last and comes back first.
      CHECK(address(a) == first);
    }
  }
  const auto after = ember::cpu::memory_stats();
  if (after.caching) {
    CHECK(after.allocations == allocations_after_first);  // steps 1..4 took no block from malloc
    CHECK(after.cache_hits == before.cache_hits + 8);
    CHECK(after.cached == 2 * kLarge * sizeof(float));
  } else {
    // A sanitizer build: every block goes back to malloc, so AddressSanitizer sees a use after free.
    CHECK(after.allocations == before.allocations + 10);
    CHECK(after.cached == 0);
  }
}

TEST_CASE("the CPU block cache never hands out a block of another size, nor keeps small ones") {
  ThreadsGuard two(2);
  ember::cpu::empty_cache();
  ember::Tensor a = ember::empty({kLarge});
  const uintptr_t cached_block = address(a);
  a = ember::Tensor();
  const size_t cached = ember::cpu::memory_stats().cached;
  // One float more, and one less: both need a block of their own size.
  ember::Tensor larger = ember::empty({kLarge + 1});
  ember::Tensor smaller = ember::empty({kLarge - 1});
  CHECK(address(larger) != cached_block);
  CHECK(address(smaller) != cached_block);
  CHECK(ember::cpu::memory_stats().cached == cached);  // still held, for its own size
  ember::Tensor small = ember::empty({1000});          // 4 KB
  small = ember::Tensor();
  CHECK(ember::cpu::memory_stats().cached == cached);
  ember::cpu::empty_cache();
  CHECK(ember::cpu::memory_stats().cached == 0);
}

TEST_CASE("on one thread freed CPU blocks go back to malloc") {
  ThreadsGuard one(1);
  ember::cpu::empty_cache();
  for (int i = 0; i < 3; ++i) ember::Tensor x = ember::empty({kLarge});
  CHECK(ember::cpu::memory_stats().cached == 0);
}

TEST_CASE("the CPU block cache keeps its counters under allocations from several threads") {
  ThreadsGuard two(2);
  ember::cpu::empty_cache();
  const auto before = ember::cpu::memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        // Sizes shared between threads, so blocks move from one thread to another.
        ember::Tensor x = ember::empty({kLarge + 16 * ((i + t) % 3)});
        static_cast<float*>(x.data_ptr())[0] = static_cast<float>(i);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto after = ember::cpu::memory_stats();
  CHECK(after.allocations + after.cache_hits == before.allocations + before.cache_hits + 800);
  if (after.caching) {
    // At most four blocks of each of the three sizes were ever live at once.
    CHECK(after.allocations - before.allocations <= 12);
    CHECK(after.cached <= 12 * (kLarge + 32) * sizeof(float));
  }
  ember::cpu::empty_cache();
}
