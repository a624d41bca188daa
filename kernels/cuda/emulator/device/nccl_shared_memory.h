// ember's emulated NCCL: a named POSIX shared memory segment that every rank of a communicator
// maps, whether the ranks are threads of one process or separate processes.
// defines: ember::emu::nccl::SharedMemory
#pragma once

#include <cstddef>
#include <string>

namespace ember::emu::nccl {

class SharedMemory {
 public:
  // Opens the shared memory object `name` ("/ember-nccl-..."), creating it zero-filled and `bytes`
  // long if it does not exist yet, and maps it read-write. Throws TransportError: `system` when a
  // call fails (naming it and errno), `usage` when the object exists with another size (the
  // ranks disagree on the communicator's shape).
  SharedMemory(const std::string& name, size_t bytes);
  ~SharedMemory();  // unmaps; the object itself lives on until unlink() and the last unmap
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  std::byte* data() const { return data_; }
  size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }

  // Removes the name, so that the memory goes away with the last mapping (even one in a process
  // that crashes). Idempotent: a name already removed, by any rank, is not an error.
  void unlink();

 private:
  std::string name_;
  size_t bytes_ = 0;
  std::byte* data_ = nullptr;
};

}  // namespace ember::emu::nccl
