#include "ember/core/storage.h"

#include <malloc.h>
#include <sys/sysinfo.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>

#include "ember/common/error.h"
#include "ember/core/cuda/runtime.h"

namespace ember {

namespace {

constexpr size_t kCpuAlignment = 64;

// Note [CPU allocation reuse]: glibc serves blocks above 128 KiB with fresh mmap()s and returns
// them to the kernel on free, so every training step page-faults in each new activation
// (measured: ~10% of a step of the tutorial network). Raising the mmap and trim thresholds makes
// glibc keep and reuse those blocks, which is what a caching allocator would do, for free.
const bool cpu_allocation_reuse = [] {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  return true;
}();

// All the memory a CPU allocation could ever get: this machine's RAM and swap. Asking for more
// cannot succeed (malloc fails, or with overcommit the first write kills the process), and under
// a sanitizer or libFuzzer a huge malloc aborts instead of returning null, so it is refused first.
size_t cpu_memory_limit() {
  static const size_t limit = [] {
    struct sysinfo info {};
    if (::sysinfo(&info) != 0) return std::numeric_limits<size_t>::max();
    return (static_cast<size_t>(info.totalram) + info.totalswap) * info.mem_unit;
  }();
  return limit;
}

// Note [CPU allocation alignment]: blocks come from malloc, 64-byte aligned by hand (the raw
// pointer is kept in the 8 bytes before the aligned one), not from aligned_alloc: glibc's
// aligned_alloc asks for size + alignment + a header and trims the excess, so a freed block never
// fits the next request of the same size, the heap grows at every step and each new block
// page-faults in (measured: a 14 MB activation written in 90 ms instead of 0.4 ms). malloc'd
// blocks of one size are reused, as Note [CPU allocation reuse] intends.
void* allocate_cpu(size_t nbytes) {
  if (nbytes > cpu_memory_limit()) {
    throw OutOfMemory(detail::str("cpu allocator: cannot allocate ", nbytes, " bytes (", nbytes >> 30,
                                  " GiB): more than this machine's memory and swap (", cpu_memory_limit() >> 30,
                                  " GiB)"));
  }
  void* raw = std::malloc(nbytes + kCpuAlignment);
  if (raw == nullptr) {
    throw OutOfMemory(detail::str("cpu allocator: could not allocate ", nbytes, " bytes"));
  }
  // malloc aligns to 16, so there are at least 16 bytes before the aligned address for `raw`.
  auto aligned = (reinterpret_cast<uintptr_t>(raw) + kCpuAlignment) & ~uintptr_t(kCpuAlignment - 1);
  reinterpret_cast<void**>(aligned)[-1] = raw;
  return reinterpret_cast<void*>(aligned);
}

void free_cpu(void* data) { std::free(static_cast<void**>(data)[-1]); }

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cpu()) {
    return std::shared_ptr<Storage>(new Storage(allocate_cpu(nbytes), nbytes, device, free_cpu));
  }
  void* data = cuda::detail::allocate(nbytes, device.index());
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, cuda::detail::deallocate));
}

std::shared_ptr<Storage> Storage::allocate_pinned(size_t nbytes) {
  auto storage = std::shared_ptr<Storage>(
      new Storage(cuda::detail::allocate_pinned(nbytes), nbytes, Device::cpu(), cuda::detail::free_pinned));
  storage->pinned_ = true;
  return storage;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device, Deleter deleter) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, std::move(deleter)));
}

Storage::~Storage() {
  if (deleter_) deleter_(data_);
}

}  // namespace ember
