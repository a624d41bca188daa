// The CUDA runtime for a build with CUDA: device discovery, streams, the caching allocator.
#include <atomic>
#include <map>
#include <set>
#include <vector>
#include <mutex>
#include <unordered_map>

#include "ember/core/cuda/check.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"

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
      const bool capturing = is_capturing(stream);
      cudaError_t status = malloc_maybe_capturing(&ptr, size, capturing);
      if (status == cudaErrorMemoryAllocation && !capturing) {  // releasing synchronises: not during capture
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
    if (retired_.count(block.stream)) block.stream = nullptr;  // its graph is gone
    for (auto& [key, held] : held_back_) {
      if (key.first == block.device && key.second != block.stream) {
        held.push_back(Block{block.device, block.stream, block.size});
        held_ptrs_[key].push_back(ptr);
        return;
      }
    }
    free_[{block.device, block.stream}].emplace(block.size, ptr);
  }

  // Note [Graphs and the allocator]: a captured graph replays into the addresses its kernels saw
  // during capture. Blocks allocated during capture come from the capture stream's own pool,
  // which no eager work draws on, so they stay the graph's. A block allocated before the capture
  // and freed during it may be touched by replays too, so it is held back until the graph goes.
  void begin_capture(int device, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    held_back_[{device, stream}];
  }
  void end_capture(int device, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    auto key = std::make_pair(device, stream);
    graph_held_[key] = std::move(held_back_[key]);
    graph_held_ptrs_[key] = std::move(held_ptrs_[key]);
    held_back_.erase(key);
    held_ptrs_.erase(key);
  }
  void release_capture(int device, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    auto key = std::make_pair(device, stream);
    auto& blocks = graph_held_[key];
    auto& ptrs = graph_held_ptrs_[key];
    for (size_t i = 0; i < blocks.size(); ++i) free_[{device, blocks[i].stream}].emplace(blocks[i].size, ptrs[i]);
    graph_held_.erase(key);
    graph_held_ptrs_.erase(key);
    if (auto pool = free_.find(key); pool != free_.end()) {
      free_[{device, nullptr}].merge(pool->second);
      free_.erase(pool);
    }
    for (auto& [p, live] : live_) {
      if (live.device == device && live.stream == stream) live.stream = nullptr;
    }
    retired_.insert(stream);
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
      if (graph_held_.count(key) || held_back_.count(key)) continue;  // a live graph's memory
      for (auto& [size, ptr] : pool) {
        cudaFree(ptr);
        stats_[device].reserved -= size;
      }
      pool.clear();
    }
  }

  static bool is_capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return stream != nullptr && cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
           status == cudaStreamCaptureStatusActive;
  }

  // cudaMalloc is a "potentially unsafe" call under thread-local capture; the CUDA guide's
  // answer is to switch this thread to relaxed mode around it.
  static cudaError_t malloc_maybe_capturing(void** ptr, size_t size, bool capturing) {
    if (!capturing) return cudaMalloc(ptr, size);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t status = cudaMalloc(ptr, size);
    cudaThreadExchangeStreamCaptureMode(&mode);
    return status;
  }

  using PoolKey = std::pair<int, cudaStream_t>;
  std::mutex mutex_;
  std::map<PoolKey, std::multimap<size_t, void*>> free_;
  std::map<PoolKey, std::vector<Block>> held_back_, graph_held_;  // see Note [Graphs and the allocator]
  std::map<PoolKey, std::vector<void*>> held_ptrs_, graph_held_ptrs_;
  std::set<cudaStream_t> retired_;
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

bool is_capturing(int device) noexcept {
  cudaStream_t stream = current_stream(device);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return stream != nullptr && cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusActive;
}

MemoryStats memory_stats(int device) {
  check_device(device, "memory_stats");
  return allocator().stats(device);
}

void empty_cache() {
  if (device_count() > 0) allocator().empty_cache();
}

void set_poison_allocations(bool enabled) { poison_allocations.store(enabled); }

Event::Event(int device, bool timing) : device_(device) {
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}
void Event::record(cudaStream_t stream) {
  DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaEventRecord(event_, stream));
}
void Event::wait(cudaStream_t stream) const { EMBER_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
void Event::synchronize() const { EMBER_CUDA_CHECK(cudaEventSynchronize(event_)); }
bool Event::query() const {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  EMBER_CUDA_CHECK(status);
  return true;
}
float Event::elapsed_ms(const Event& later) const {
  float ms = 0;
  EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, later.event_));
  return ms;
}

namespace {

// Note [Asynchronous copies from pinned memory]: a copy to the GPU out of page-locked memory
// is left running (the DMA engine reads the host buffer while the CPU moves on: the next batch
// loads while this one trains). The buffer must outlive the copy, so each copy records an event
// against its block, and freeing the block first waits for those events.
class PinnedBlocks {
 public:
  void add(void* ptr, size_t nbytes) {
    std::lock_guard lock(mutex_);
    blocks_[static_cast<const char*>(ptr)] = Entry{nbytes, {}};
  }

  // Records the copy against the pinned block holding `src`; false when `src` is not pinned.
  bool note_copy(const void* src, cudaStream_t stream) {
    std::lock_guard lock(mutex_);
    Entry* entry = find(static_cast<const char*>(src));
    if (entry == nullptr) return false;
    cudaEvent_t event = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(event, stream));
    entry->in_flight.push_back(event);
    return true;
  }

  // Waits for the copies out of `ptr` and forgets the block.
  void remove(void* ptr) noexcept {
    std::vector<cudaEvent_t> events;
    {
      std::lock_guard lock(mutex_);
      auto it = blocks_.find(static_cast<const char*>(ptr));
      if (it == blocks_.end()) return;
      events = std::move(it->second.in_flight);
      blocks_.erase(it);
    }
    for (cudaEvent_t event : events) {
      cudaEventSynchronize(event);
      cudaEventDestroy(event);
    }
  }

 private:
  struct Entry {
    size_t nbytes;
    std::vector<cudaEvent_t> in_flight;
  };

  Entry* find(const char* p) {
    auto it = blocks_.upper_bound(p);
    if (it == blocks_.begin()) return nullptr;
    --it;
    if (p >= it->first + it->second.nbytes) return nullptr;
    // Drop events of copies that have finished, so a long-lived buffer does not collect them.
    auto& events = it->second.in_flight;
    std::erase_if(events, [](cudaEvent_t e) {
      if (cudaEventQuery(e) != cudaSuccess) return false;
      cudaEventDestroy(e);
      return true;
    });
    cudaGetLastError();  // cudaErrorNotReady from the queries is not an error
    return &it->second;
  }

  std::mutex mutex_;
  std::map<const char*, Entry> blocks_;
};

PinnedBlocks& pinned_blocks() {
  static auto* instance = new PinnedBlocks();  // never destroyed, like the device allocator
  return *instance;
}

}  // namespace


namespace detail {

void* allocate(size_t nbytes, int device) { return allocator().allocate(nbytes, device); }
void begin_capture(int device, cudaStream_t stream) { allocator().begin_capture(device, stream); }
void end_capture(int device, cudaStream_t stream) { allocator().end_capture(device, stream); }
void release_capture(int device, cudaStream_t stream) { allocator().release_capture(device, stream); }
void deallocate(void* ptr) noexcept { allocator().deallocate(ptr); }

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream));
  if (!pinned_blocks().note_copy(src, stream)) EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
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
    // The source was written by work queued on its own device's stream, which the destination's
    // stream knows nothing of: the copy waits for that work (it read stale data without this).
    Event source_written(src_device);
    source_written.record(current_stream(src_device));
    source_written.wait(current_stream(dst_device));
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
  pinned_blocks().add(ptr, std::max<size_t>(nbytes, 1));
  return ptr;
}

void free_pinned(void* ptr) noexcept {
  pinned_blocks().remove(ptr);
  cudaFreeHost(ptr);
}

void fill_zero(void* dst, size_t nbytes, int device) {
  DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaMemsetAsync(dst, 0, nbytes, current_stream(device)));
}

}  // namespace detail
}  // namespace ember::cuda
