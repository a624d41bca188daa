// A block of memory on one device, shared by every tensor that views it.
// defines: ember::Storage
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "ember/core/device.h"

namespace ember {

// Owns `nbytes` of memory on `device`. CPU memory is 64-byte aligned and comes from the block
// cache of core/cpu_allocator.h; CUDA memory from the caching allocator (core/cuda/runtime.h).
// Storage also carries the version counter that autograd uses to detect in-place changes of
// saved tensors: every in-place op on any view bumps it.
class Storage {
 public:
  using Deleter = std::function<void(void*)>;

  // Allocates uninitialised memory. Throws ember::OutOfMemory when the allocation fails, and
  // before trying when `nbytes` is more than the device could ever give (on the CPU: more than
  // this machine's memory and swap; on a GPU the caching allocator reports the free memory).
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Page-locked CPU memory for fast copies to a GPU (needs a CUDA device; throws otherwise).
  static std::shared_ptr<Storage> allocate_pinned(size_t nbytes);
  // Wraps memory ember does not own; `deleter` (may be empty) runs when the last view is gone.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device, Deleter deleter);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  bool is_pinned() const { return pinned_; }
  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  Storage(void* data, size_t nbytes, Device device, Deleter deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  uint64_t version_ = 0;
  bool pinned_ = false;
};

}  // namespace ember
