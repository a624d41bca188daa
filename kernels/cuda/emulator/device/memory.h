// The emulated GPUs' memory: one arena per device, mapped at its own address range so that any
// pointer tells which device (or the host) it belongs to, and, in strict mode, inaccessible to
// every thread except while a stream's worker runs device work.
// defines: ember::emu::device::{Place, PlaceKind, locate, allocate, release, memory_info,
//          allocate_pinned, release_pinned, DeviceAccess, strict_mode, parse_bytes}
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

namespace ember::emu::device {

enum class PlaceKind { Device, Pinned, Pageable };

// Where a range of bytes lies. For Device and Pinned, `base` and `size` are the allocation's.
struct Place {
  PlaceKind kind = PlaceKind::Pageable;
  int device = -1;  // Device only
  const char* base = nullptr;
  size_t size = 0;
};

// Where [ptr, ptr + bytes) lies. `inside` is false when the range starts in a device arena or a
// pinned block but does not lie inside one live allocation (an overrun, or a freed block).
Place locate(const void* ptr, size_t bytes, bool* inside = nullptr);

// The device whose arena holds `ptr` (allocated or not), or -1.
int arena_of(const void* ptr);

// cudaMalloc on `device`: nullptr when the arena has no free range of `bytes` (rounded up to 256,
// as cudaMalloc aligns). `why` then says how much is free.
void* allocate(int device, size_t bytes, std::string& why);
// false when `ptr` is not the start of a live allocation on any device.
bool release(void* ptr);
void memory_info(int device, size_t& free_bytes, size_t& total_bytes);

// cudaHostAlloc: page-aligned host memory, recorded so that copies know it is pinned.
void* allocate_pinned(size_t bytes);
bool release_pinned(void* ptr);

// EMBER_EMULATED_STRICT (default 1): device arenas are mapped without access except while some
// worker runs device work (DeviceAccess), and a host access to them is reported, naming the
// device, before the process stops.
bool strict_mode();

// Held by a stream's worker while it runs queued work: in strict mode the arenas are accessible
// while at least one DeviceAccess exists.
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
};

// "512M", "2G", "1048576": a size in bytes; throws std::invalid_argument naming `variable`.
size_t parse_bytes(std::string_view text, const char* variable);

}  // namespace ember::emu::device
