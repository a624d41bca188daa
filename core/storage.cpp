#include "ember/core/storage.h"

#include "ember/core/cpu_allocator.h"
#include "ember/core/cuda/runtime.h"

namespace ember {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cpu()) {
    return std::shared_ptr<Storage>(
        new Storage(cpu::detail::allocate(nbytes), nbytes, device, cpu::detail::deallocate));
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
