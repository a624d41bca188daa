// The CUDA runtime as the rest of ember sees it: device discovery, the caching allocator, copies.
// defines: ember::cuda::is_available, device_count, devices, synchronize, memory_stats, empty_cache,
//          ember::cuda::detail::{allocate, deallocate, copy_*}
//
// Every function here exists in every build. In a build without CUDA, or on a machine without a
// driver or a GPU, is_available() is false and device_count() is 0; the others throw ember::Error
// saying that no CUDA device is available.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/core/device.h"

namespace ember::cuda {

// True when at least one CUDA device can be used. Never throws: any error from the driver
// ("driver version is insufficient", no device) counts as zero devices.
bool is_available() noexcept;
int device_count() noexcept;
std::vector<Device> devices();  // cuda:0 .. cuda:N-1

// Waits for all work queued on `device` (all devices when -1).
void synchronize(int device = -1);

// True while a cuda::Graph is capturing `device`'s current stream: ops must not wait for the GPU.
bool is_capturing(int device) noexcept;

// The caching allocator's counters for one device, in bytes unless named otherwise.
struct MemoryStats {
  size_t allocated = 0;       // held by live tensors
  size_t reserved = 0;        // obtained from cudaMalloc: allocated + cached free blocks
  size_t peak_allocated = 0;  // the largest `allocated` seen since start
  size_t device_allocations = 0;  // cudaMalloc calls made so far (a training loop stops adding to it)
  size_t cache_hits = 0;          // allocations served from a cached block
};
MemoryStats memory_stats(int device = 0);

// Returns every cached free block to the driver (cudaFree). Live tensors are unaffected.
void empty_cache();

// For tests: when on, every CUDA allocation is filled with 0xFF bytes (NaN as float32 and
// float64) before it is handed out, so a kernel that leaves an output element unwritten fails.
void set_poison_allocations(bool enabled);

namespace detail {

// Caching allocation of `nbytes` on `device`, for use on that device's current stream. On
// cudaErrorMemoryAllocation the cache is emptied and the allocation retried once; then it throws
// ember::OutOfMemory naming the requested size and the free memory.
void* allocate(size_t nbytes, int device);
void deallocate(void* ptr) noexcept;

// Synchronous copies between host and device memory (the device of the device pointer).
void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes);
void fill_zero(void* dst, size_t nbytes, int device);

// Page-locked host memory (cudaHostAlloc), from which copies to a GPU run at full bus speed.
void* allocate_pinned(size_t nbytes);
void free_pinned(void* ptr) noexcept;

}  // namespace detail
}  // namespace ember::cuda
