// The CPU allocator behind Storage: 64-byte aligned blocks from malloc; while ember runs more than
// one thread, freed blocks are kept by size and handed out again (Note [the CPU block cache] in
// cpu_allocator.cpp).
// defines: ember::cpu::memory_stats, empty_cache, ember::cpu::detail::{allocate, deallocate}
#pragma once

#include <cstddef>

namespace ember::cpu {

// The block cache's counters, in bytes unless named otherwise.
struct MemoryStats {
  size_t cached = 0;        // freed blocks held for reuse
  size_t allocations = 0;   // blocks obtained from malloc so far (a training loop stops adding to it)
  size_t cache_hits = 0;    // allocations served from a cached block
  bool caching = false;     // false in sanitizer builds, which keep malloc's use-after-free checks
};
MemoryStats memory_stats();

// Returns every cached block to malloc. Live tensors are unaffected.
void empty_cache();

namespace detail {

// `nbytes` of uninitialised memory, 64-byte aligned. Throws ember::OutOfMemory when the request
// is larger than this machine's memory and swap, and when malloc fails even after the cache has
// been emptied.
void* allocate(size_t nbytes);
void deallocate(void* data) noexcept;

}  // namespace detail
}  // namespace ember::cpu
