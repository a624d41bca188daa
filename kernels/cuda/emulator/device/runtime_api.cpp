// The CUDA runtime's device and memory calls on the emulated GPUs: device selection, cudaMalloc
// and friends on the arenas of memory.cpp, and copies and fills queued on streams. Every call
// checks what a GPU would refuse (a range that overruns its allocation, a copy whose direction
// does not match its pointers, a pointer that is not device memory) and says what was wrong.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ember/kernels/cuda/emulator/device/device.h"
#include "ember/kernels/cuda/emulator/device/memory.h"
#include "ember/kernels/cuda/emulator/device/stream_state.h"

using namespace ember::emu::device;

namespace {

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

std::string describe(const Place& place) {
  switch (place.kind) {
    case PlaceKind::Device: return "memory of cuda:" + std::to_string(place.device);
    case PlaceKind::Pinned: return "pinned host memory";
    case PlaceKind::Pageable: return "pageable host memory";
  }
  return "";
}

// The range [ptr, ptr + count) of `role` ("destination"), located; an error when it starts in a
// device allocation or a pinned block but runs past its end, or lies in no allocation at all.
cudaError_t locate_range(const char* call, const char* role, const void* ptr, size_t count, Place& place) {
  bool inside = false;
  place = locate(ptr, count, &inside);
  if (inside) return cudaSuccess;
  if (place.base == nullptr) {
    return fail(cudaErrorInvalidValue, std::string(call) + ": the " + role + " " + hex(ptr) + " lies in " +
                                           describe(place) + " but in no live allocation (freed?)");
  }
  return fail(cudaErrorInvalidValue, std::string(call) + ": the " + role + " [" + hex(ptr) + ", +" +
                                         std::to_string(count) + " bytes) runs past the end of its " +
                                         std::to_string(place.size) + "-byte allocation in " + describe(place));
}

bool direction_matches(cudaMemcpyKind kind, const Place& dst, const Place& src) {
  const bool d = dst.kind == PlaceKind::Device, s = src.kind == PlaceKind::Device;
  switch (kind) {
    case cudaMemcpyHostToHost: return !d && !s;
    case cudaMemcpyHostToDevice: return d && !s;
    case cudaMemcpyDeviceToHost: return !d && s;
    case cudaMemcpyDeviceToDevice: return d && s;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice: return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost: return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice: return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault: return "cudaMemcpyDefault";
  }
  return "an unknown cudaMemcpyKind";
}

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue, "cudaGetDeviceCount: null count");
  *count = device_count();
  return *count == 0 ? fail(cudaErrorNoDevice, "EMBER_EMULATED_GPUS=0: no emulated devices") : cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue, "cudaGetDevice: null device");
  *device = this_thread_device();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) {
    return fail(cudaErrorInvalidDevice, "cudaSetDevice(" + std::to_string(device) + "): there are " +
                                            std::to_string(device_count()) + " emulated devices (EMBER_EMULATED_GPUS)");
  }
  this_thread_device() = device;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue, "cudaMalloc: null result pointer");
  *ptr = nullptr;
  if (cudaError_t status = unsafe_during_capture("cudaMalloc"); status != cudaSuccess) return status;
  if (size == 0) return cudaSuccess;
  std::string why;
  *ptr = allocate(this_thread_device(), size, why);
  if (*ptr == nullptr) return fail(cudaErrorMemoryAllocation, "cudaMalloc of " + std::to_string(size) + " bytes: " + why);
  return cudaSuccess;
}

// cudaFree waits for the device's queued work first, as CUDA's does.
cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  if (cudaError_t status = unsafe_during_capture("cudaFree"); status != cudaSuccess) return status;
  const int device = arena_of(ptr);
  if (device >= 0) synchronize_device(device);
  if (device < 0 || !release(ptr)) {
    return fail(cudaErrorInvalidValue, "cudaFree(" + hex(ptr) + "): not the start of a live cudaMalloc allocation (" +
                                           (device < 0 ? "not device memory" : "freed twice, or inside a block") + ")");
  }
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return fail(cudaErrorInvalidValue, "cudaMemGetInfo: null result");
  memory_info(this_thread_device(), *free_bytes, *total_bytes);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue, "cudaHostAlloc: null result pointer");
  *ptr = allocate_pinned(size);
  return *ptr ? cudaSuccess : fail(cudaErrorMemoryAllocation, "cudaHostAlloc of " + std::to_string(size) + " bytes");
}

cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, cudaHostAllocDefault); }

// Unlike CUDA's, this does not wait for the device: a copy still reading the block then reads
// freed memory, which AddressSanitizer reports (Note [Asynchronous copies from pinned memory] in
// core/cuda/runtime.cpp is what prevents it).
cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  return release_pinned(ptr) ? cudaSuccess
                             : fail(cudaErrorInvalidValue, "cudaFreeHost(" + hex(ptr) + "): not a cudaHostAlloc block");
}

// Copies that touch pageable host memory behave as CUDA documents: from the host, the source is
// staged before the call returns; to the host, the call returns once the copy is done. Neither
// can be captured. Copies between device and pinned memory are fully asynchronous.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  Place to, from;
  if (cudaError_t status = locate_range("cudaMemcpyAsync", "destination", dst, count, to); status != cudaSuccess) return status;
  if (cudaError_t status = locate_range("cudaMemcpyAsync", "source", src, count, from); status != cudaSuccess) return status;
  if (!direction_matches(kind, to, from)) {
    return fail(cudaErrorInvalidMemcpyDirection, std::string("cudaMemcpyAsync: ") + kind_name(kind) + " from " +
                                                     describe(from) + " to " + describe(to));
  }
  if (to.kind != PlaceKind::Device && from.kind != PlaceKind::Device) {
    std::memmove(dst, src, count);
    return cudaSuccess;
  }
  if (from.kind == PlaceKind::Pageable) {
    if (cudaError_t status = fail_if_capturing(stream, "cudaMemcpyAsync", "its source is pageable host memory");
        status != cudaSuccess) {
      return status;
    }
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    return enqueue_work(stream, Work{"cudaMemcpyAsync", [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }});
  }
  if (to.kind == PlaceKind::Pageable) {
    if (cudaError_t status = fail_if_capturing(stream, "cudaMemcpyAsync", "its destination is pageable host memory");
        status != cudaSuccess) {
      return status;
    }
    Ticket ticket;
    if (cudaError_t status = enqueue_work(stream, Work{"cudaMemcpyAsync", [dst, src, count] { std::memcpy(dst, src, count); }},
                                          &ticket);
        status != cudaSuccess) {
      return status;
    }
    wait_for(ticket);
    return sticky_error(from.device);
  }
  return enqueue_work(stream, Work{"cudaMemcpyAsync", [dst, src, count] { std::memcpy(dst, src, count); }});
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (cudaError_t status = unsafe_during_capture("cudaMemcpy"); status != cudaSuccess) return status;
  if (cudaError_t status = cudaMemcpyAsync(dst, src, count, kind, nullptr); status != cudaSuccess) return status;
  return cudaStreamSynchronize(nullptr);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  Place to, from;
  if (cudaError_t status = locate_range("cudaMemcpyPeerAsync", "destination", dst, count, to); status != cudaSuccess) return status;
  if (cudaError_t status = locate_range("cudaMemcpyPeerAsync", "source", src, count, from); status != cudaSuccess) return status;
  if (to.kind != PlaceKind::Device || to.device != dst_device || from.kind != PlaceKind::Device || from.device != src_device) {
    return fail(cudaErrorInvalidValue, "cudaMemcpyPeerAsync: asked to copy cuda:" + std::to_string(src_device) + " -> cuda:" +
                                           std::to_string(dst_device) + ", but the source is " + describe(from) +
                                           " and the destination " + describe(to));
  }
  return enqueue_work(stream, Work{"cudaMemcpyPeerAsync", [dst, src, count] { std::memcpy(dst, src, count); }});
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  Place place;
  if (cudaError_t status = locate_range("cudaMemsetAsync", "destination", ptr, count, place); status != cudaSuccess) return status;
  if (place.kind != PlaceKind::Device) {
    return fail(cudaErrorInvalidValue, "cudaMemsetAsync: " + hex(ptr) + " is " + describe(place) + ", not device memory");
  }
  return enqueue_work(stream, Work{"cudaMemsetAsync", [ptr, value, count] { std::memset(ptr, value, count); }});
}
