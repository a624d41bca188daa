// The CUDA runtime for a build with CUDA: device discovery, streams, the caching allocator.
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/cuda/check.h"
#include "core/cuda/runtime.h"
#include "core/cuda/stream.h"

namespace ember::cuda {

bool is_available() noexcept { return device_count() > 0; }

int device_count() noexcept {
  // Any error (no driver, "driver version is insufficient", no device) counts as zero devices.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error
      return 0;
    }
    return n;
  }();
  return count;
}

std::vector<Device> devices() {
  std::vector<Device> out;
  for (int i = 0; i < device_count(); ++i) out.push_back(Device::cuda(i));
  return out;
}

namespace {

void check_device(int device, const char* op) {
  EMBER_CHECK(device >= 0 && device < device_count(), "cuda: ", op, ": device cuda:", device,
              " is not available (", device_count(), " CUDA devices found)");
}

std::atomic<bool> poison_allocations{false};

std::mutex stream_mutex;
std::unordered_map<int, cudaStream_t> streams;

// Note [Caching allocator]: freed blocks are kept in per-(device, stream) pools keyed by rounded
// size and handed out again best-fit, so a training loop whose shapes repeat stops calling
// cudaMalloc after its first step. Sizes round up to 512 bytes below 1 MiB and to 2 MiB above,
// as PyTorch's allocator does, so that nearby sizes share blocks.
struct Block {
  int device;
  cudaStream_t stream;
  size_t size;
};

class CachingAllocator {
 public:
  void* allocate(size_t nbytes, int device) {
    check_device(device, "allocate");
    size_t size = round_size(nbytes);
    cudaStream_t stream = current_stream(device);
    std::lock_guard lock(mutex_);
    auto& pool = free_[{device, stream}];
    MemoryStats& stats = stats_[device];
    void* ptr = nullptr;
    if (auto it = pool.lower_bound(size); it != pool.end() && it->first <= 2 * size) {
      ptr = it->second;
      size = it->first;
      pool.erase(it);
      ++stats.cache_hits;
    } else {
      DeviceGuard guard(device);
      cudaError_t status = cudaMalloc(&ptr, size);
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        release_cached(device);
        status = cudaMalloc(&ptr, size);
      }
      if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_bytes = 0, total_bytes = 0;
        cudaMemGetInfo(&free_bytes, &total_bytes);
        throw OutOfMemory(ember::detail::str("cuda: out of memory allocating ", nbytes, " bytes (",
                                      nbytes >> 20, " MiB) on cuda:", device, "; ", free_bytes >> 20,
                                      " MiB free of ", total_bytes >> 20, " MiB, ", stats.allocated >> 20,
                                      " MiB held by tensors"));
      }
      EMBER_CUDA_CHECK(status);
      ++stats.device_allocations;
      stats.reserved += size;
    }
    stats.allocated += size;
    stats.peak_allocated = std::max(stats.peak_allocated, stats.allocated);
    live_[ptr] = Block{device, stream, size};
    if (poison_allocations.load()) {
      DeviceGuard guard(device);
      EMBER_CUDA_CHECK(cudaMemsetAsync(ptr, 0xFF, size, stream));
    }
    return ptr;
  }

  void deallocate(void* ptr) noexcept {
    if (ptr == nullptr) return;
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    Block block = it->second;
    live_.erase(it);
    stats_[block.device].allocated -= block.size;
    free_[{block.device, block.stream}].emplace(block.size, ptr);
  }

  void empty_cache() {
    std::lock_guard lock(mutex_);
    for (int d = 0; d < device_count(); ++d) release_cached(d);
  }

  MemoryStats stats(int device) {
    std::lock_guard lock(mutex_);
    return stats_[device];
  }

 private:
  static size_t round_size(size_t n) {
    constexpr size_t kSmall = 512, kLarge = 2 << 20, kSmallLimit = 1 << 20;
    if (n <= kSmallLimit) return std::max<size_t>(kSmall, (n + kSmall - 1) / kSmall * kSmall);
    return (n + kLarge - 1) / kLarge * kLarge;
  }

  // Returns `device`'s cached blocks to the driver. Caller holds mutex_.
  void release_cached(int device) {
    DeviceGuard guard(device);
    cudaDeviceSynchronize();  // a freed block may still be in use by queued kernels
    for (auto& [key, pool] : free_) {
      if (key.first != device) continue;
      for (auto& [size, ptr] : pool) {
        cudaFree(ptr);
        stats_[device].reserved -= size;
      }
      pool.clear();
    }
  }

  std::mutex mutex_;
  std::map<std::pair<int, cudaStream_t>, std::multimap<size_t, void*>> free_;
  std::unordered_map<void*, Block> live_;
  std::map<int, MemoryStats> stats_;
};

CachingAllocator& allocator() {
  static auto* instance = new CachingAllocator();  // never destroyed: tensors may outlive main()
  return *instance;
}

}  // namespace

cudaStream_t current_stream(int device) {
  std::lock_guard lock(stream_mutex);
  auto it = streams.find(device);
  return it == streams.end() ? nullptr : it->second;
}

void set_current_stream(int device, cudaStream_t stream) {
  std::lock_guard lock(stream_mutex);
  streams[device] = stream;
}

DeviceGuard::DeviceGuard(int device) {
  EMBER_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) EMBER_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

void synchronize(int device) {
  if (device < 0) {
    for (int d = 0; d < device_count(); ++d) synchronize(d);
    return;
  }
  check_device(device, "synchronize");
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaDeviceSynchronize());
}

MemoryStats memory_stats(int device) {
  check_device(device, "memory_stats");
  return allocator().stats(device);
}

void empty_cache() {
  if (device_count() > 0) allocator().empty_cache();
}

void set_poison_allocations(bool enabled) { poison_allocations.store(enabled); }

namespace detail {

void* allocate(size_t nbytes, int device) { return allocator().allocate(nbytes, device); }
void deallocate(void* ptr) noexcept { allocator().deallocate(ptr); }

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, current_stream(device)));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)));
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device) {
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, current_stream(device)));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)));
}

void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes) {
  DeviceGuard guard(dst_device);
  if (dst_device == src_device) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, current_stream(dst_device)));
  } else {
    EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, current_stream(dst_device)));
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(current_stream(dst_device)));
}

void* allocate_pinned(size_t nbytes) {
  EMBER_CHECK(device_count() > 0, "pin_memory: pinned host memory needs a CUDA device, none is available");
  void* ptr = nullptr;
  cudaError_t status = cudaHostAlloc(&ptr, std::max<size_t>(nbytes, 1), cudaHostAllocDefault);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemory(ember::detail::str("pin_memory: out of pinned host memory allocating ", nbytes, " bytes"));
  }
  EMBER_CUDA_CHECK(status);
  return ptr;
}

void free_pinned(void* ptr) noexcept { cudaFreeHost(ptr); }

void fill_zero(void* dst, size_t nbytes, int device) {
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaMemsetAsync(dst, 0, nbytes, current_stream(device)));
}

}  // namespace detail
}  // namespace ember::cuda
