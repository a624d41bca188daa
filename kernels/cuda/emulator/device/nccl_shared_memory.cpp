// ember's emulated NCCL: a named POSIX shared memory segment (nccl_shared_memory.h).
#include "ember/kernels/cuda/emulator/device/nccl_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ember/kernels/cuda/emulator/device/nccl_transport_error.h"

namespace ember::emu::nccl {

namespace {

[[noreturn]] void throw_system(const std::string& call, const std::string& name) {
  throw TransportError(TransportError::Kind::system,
                       call + "(\"" + name + "\") failed: " + std::strerror(errno));
}

size_t size_of(int fd, const std::string& name) {
  struct stat st {};
  if (fstat(fd, &st) != 0) throw_system("fstat", name);
  return static_cast<size_t>(st.st_size);
}

}  // namespace

SharedMemory::SharedMemory(const std::string& name, size_t bytes) : name_(name), bytes_(bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) throw_system("shm_open", name);
  try {
    // Every rank computes the same size from the communicator's shape, so whichever rank comes
    // first sizes the object and the others find it sized; ftruncate zero-fills it, which is the
    // segment's initial state (nccl_transport.cpp), so no rank needs to initialise it.
    if (size_of(fd, name) == 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) throw_system("ftruncate", name);
    const size_t found = size_of(fd, name);
    if (found != bytes) {
      throw TransportError(TransportError::Kind::usage,
                           "shared memory " + name + " is " + std::to_string(found) + " bytes, this rank expected " +
                               std::to_string(bytes) + " (the ranks disagree on the number of ranks or the chunk size)");
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw_system("mmap", name);
    data_ = static_cast<std::byte*>(p);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);  // the mapping keeps the object
}

SharedMemory::~SharedMemory() { munmap(data_, bytes_); }

void SharedMemory::unlink() {
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT) throw_system("shm_unlink", name_);
}

}  // namespace ember::emu::nccl
