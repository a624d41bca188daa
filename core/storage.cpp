#include "core/storage.h"

#include <cstdlib>
#include <new>

#include "common/error.h"
#include "core/cuda/runtime.h"

namespace ember {

namespace {

constexpr size_t kCpuAlignment = 64;

void* allocate_cpu(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment; 0 bytes still gets a block.
  size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* data = std::aligned_alloc(kCpuAlignment, rounded == 0 ? kCpuAlignment : rounded);
  if (data == nullptr) {
    throw OutOfMemory(detail::str("cpu allocator: could not allocate ", nbytes, " bytes"));
  }
  return data;
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cpu()) {
    return std::shared_ptr<Storage>(new Storage(allocate_cpu(nbytes), nbytes, device, std::free));
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
