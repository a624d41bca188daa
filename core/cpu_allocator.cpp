#include "ember/core/cpu_allocator.h"

#include <malloc.h>
#include <sys/sysinfo.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/threading.h"

namespace ember::cpu {
namespace {

// Note [the CPU block cache]. A freed block of at least kSmallestCached bytes is kept, by its
// exact size, and the next allocation of that size takes the one freed last. Training and
// inference loops ask for the same sizes every step, so after the first step no block comes
// from malloc.
//
// Why not leave it to glibc (Note [CPU allocation reuse] below keeps its blocks too): glibc
// splits and merges its free chunks, so the block a [64, 10, 24, 24] activation gets this step
// may be the tail of last step's larger gradient. ember's threaded kernels split their output
// by images or by ranges of elements, thread t writing the t-th part of the block; a block of the
// same size reused keeps each part with the core that wrote it last, where glibc's reuse hands
// one core lines the other one holds. On these VMs the two vCPUs sometimes run on host cores
// that share no L3; each such line then waits for a round trip across the package (~320 ns,
// ember-bench `ceiling/core_round_trip`). Measured on the tutorial network at 2 threads in that
// state (docs/performance.md, "The buffers the allocator hands out"): the training step at
// batch 64 2.01 -> 1.61 ms, at batch 256 8.97 -> 6.24 ms, inference at batch 1000 12.2 -> 9.6 ms;
// no change where the cores share an L3.
//
// On one thread (ember::get_num_threads() == 1 when the block is freed) blocks go back to malloc:
// there is no other core to keep them from, and glibc, handing out the block freed last whatever
// its size, gives memory that is hotter in cache (with the cache, the 1-thread steps measured
// 1-3 % slower). The cache holds at most a quarter of the machine's RAM; a block that would take
// it past that goes back to malloc. When malloc fails the cache is emptied and malloc tried once more, so
// memory held for reuse never turns into an OutOfMemory. Sanitizer builds do not cache: a
// use-after-free must reach AddressSanitizer's poisoned memory.
constexpr size_t kAlignment = 64;
constexpr size_t kSmallestCached = size_t(32) << 10;  // below this glibc's own bins do as well

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

// Note [CPU allocation reuse]: glibc serves blocks above 128 KiB with fresh mmap()s and returns
// them to the kernel on free, so every training step page-faulted in each new activation
// (measured: ~10% of a step of the tutorial network). Raising the mmap and trim thresholds makes
// glibc keep those blocks too: the cache above takes only what it can hold.
const bool malloc_keeps_blocks = [] {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  return true;
}();

// This machine's RAM and swap, read once.
struct MachineMemory {
  size_t ram = 0, swap = 0;
  bool known = false;
};
const MachineMemory& machine_memory() {
  static const MachineMemory memory = [] {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0) return MachineMemory{};
    return MachineMemory{static_cast<size_t>(info.totalram) * info.mem_unit,
                         static_cast<size_t>(info.totalswap) * info.mem_unit, true};
  }();
  return memory;
}

// All the memory a CPU allocation could ever get: this machine's RAM and swap. Asking for more
// cannot succeed (malloc fails, or with overcommit the first write kills the process), and under
// a sanitizer or libFuzzer a huge malloc aborts instead of returning null, so it is refused first.
size_t memory_limit() {
  const MachineMemory& m = machine_memory();
  return m.known ? m.ram + m.swap : std::numeric_limits<size_t>::max();
}

size_t cache_limit() {
  const MachineMemory& m = machine_memory();
  return m.known ? m.ram / 4 : size_t(1) << 30;
}

// Note [CPU allocation alignment]: blocks come from malloc, 64-byte aligned by hand, not from
// aligned_alloc: glibc's aligned_alloc asks for size + alignment + a header and trims the excess,
// so a freed block never fits the next request of the same size, the heap grows at every step and
// each new block page-faults in (measured: a 14 MB activation written in 90 ms instead of
// 0.4 ms). The 16 bytes or more that malloc's 16-byte alignment leaves before the aligned address
// hold the raw pointer and the requested size.
void*& raw_of(void* data) { return static_cast<void**>(data)[-1]; }
size_t& size_of(void* data) { return static_cast<size_t*>(data)[-2]; }

// Leaked on purpose: tensors freed during static destruction still find it.
struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // by requested size
  size_t cached = 0, allocations = 0, cache_hits = 0;
};
Cache& cache() {
  static Cache* instance = new Cache();
  return *instance;
}

void* malloc_aligned(size_t nbytes) {
  void* raw = std::malloc(nbytes + kAlignment);
  if (raw == nullptr) return nullptr;
  auto aligned = (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~uintptr_t(kAlignment - 1);
  void* data = reinterpret_cast<void*>(aligned);
  raw_of(data) = raw;
  size_of(data) = nbytes;
  return data;
}

// Every cached block back to malloc; the caller holds the mutex.
void empty_locked(Cache& c) {
  for (auto& [size, blocks] : c.free_blocks) {
    for (void* data : blocks) std::free(raw_of(data));
  }
  c.free_blocks.clear();
  c.cached = 0;
}

}  // namespace

MemoryStats memory_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return {c.cached, c.allocations, c.cache_hits, kCaching};
}

void empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  empty_locked(c);
}

namespace detail {

void* allocate(size_t nbytes) {
  if (nbytes > memory_limit()) {
    throw OutOfMemory(ember::detail::str("cpu allocator: cannot allocate ", nbytes, " bytes (", nbytes >> 30,
                                         " GiB): more than this machine's memory and swap (",
                                         memory_limit() >> 30, " GiB)"));
  }
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (kCaching && nbytes >= kSmallestCached) {
      auto it = c.free_blocks.find(nbytes);
      if (it != c.free_blocks.end() && !it->second.empty()) {
        void* data = it->second.back();
        it->second.pop_back();
        c.cached -= nbytes;
        ++c.cache_hits;
        return data;
      }
    }
    ++c.allocations;
  }
  void* data = malloc_aligned(nbytes);
  if (data == nullptr) {
    empty_cache();
    data = malloc_aligned(nbytes);
  }
  if (data == nullptr) {
    throw OutOfMemory(ember::detail::str("cpu allocator: could not allocate ", nbytes, " bytes"));
  }
  return data;
}

void deallocate(void* data) noexcept {
  const size_t nbytes = size_of(data);
  if (kCaching && nbytes >= kSmallestCached && get_num_threads() > 1) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached + nbytes <= cache_limit()) {
      // push_back may throw bad_alloc: then the block goes to free() below.
      try {
        c.free_blocks[nbytes].push_back(data);
        c.cached += nbytes;
        return;
      } catch (...) {
      }
    }
  }
  std::free(raw_of(data));
}

}  // namespace detail
}  // namespace ember::cpu
