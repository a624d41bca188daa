// The fuzz input as a file the readers can open by path: one in-memory file (memfd_create),
// rewritten for every input and named /proc/self/fd/N, so no input touches the disk.
// defines: ember::fuzz::InputFile
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ember::fuzz {

class InputFile {
 public:
  InputFile() : fd_(::memfd_create("ember-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }

  // Replaces the file's contents with `data` and returns its path.
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0 || (size > 0 && ::pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size))) {
      std::perror("writing the fuzz input");
      std::abort();
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ember::fuzz
