// ember's CUDA emulator: fibers, the host-side stand-in for CUDA threads. A fiber runs a function
// on its own stack and switches to and from the host thread's stack cooperatively (a few
// instructions; glibc's swapcontext makes a system call per switch and was 30x slower).
// x86-64 only. AddressSanitizer is told about every switch, so it checks the fibers' stacks too.
// defines: ember::emu::Fiber
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define EMBER_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_EMU_ASAN 1
#endif
#endif

namespace ember::emu {

// Enough for any kernel's frames; AddressSanitizer's redzones make frames larger. Stacks are
// mapped lazily, so a 1024-thread block costs only the pages its threads touch.
#if defined(EMBER_EMU_ASAN)
inline constexpr size_t kFiberStackBytes = 256 << 10;
#else
inline constexpr size_t kFiberStackBytes = 64 << 10;
#endif

class Fiber {
 public:
  // A fiber with a stack of `stack_bytes` (plus a guard page below it). Not started.
  explicit Fiber(size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Prepares the fiber to run entry(arg) from the top of its stack the next time it is resumed.
  // A fiber may be reset whether or not its previous function finished (an abandoned fiber's
  // frames are simply dropped: emulated kernels own nothing that needs destroying).
  void reset(void (*entry)(void*), void* arg);
  // From the host thread: runs the fiber until it calls suspend() or finish().
  void resume();
  // From inside the fiber: back to the host thread; resume() continues after this call.
  void suspend();
  // From inside the fiber, as its last act: back to the host thread for good.
  [[noreturn]] void finish();

 private:
  void* stack_ = nullptr;      // the mapping, guard page first
  size_t mapping_bytes_ = 0;
  void* sp_ = nullptr;         // the fiber's saved stack pointer while it is not running
  void* host_sp_ = nullptr;    // the host thread's saved stack pointer while the fiber runs
  void (*entry_)(void*) = nullptr;
  void* arg_ = nullptr;
  void* fake_stack_ = nullptr;  // AddressSanitizer's bookkeeping of this fiber's stack
  const void* host_stack_bottom_ = nullptr;
  size_t host_stack_size_ = 0;

  friend struct FiberAccess;
};

}  // namespace ember::emu
