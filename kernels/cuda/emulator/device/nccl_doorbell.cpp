// ember's emulated NCCL: a process-shared futex doorbell (nccl_doorbell.h).
#include "ember/kernels/cuda/emulator/device/nccl_doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <ctime>

namespace ember::emu::nccl {

static_assert(std::atomic_ref<uint32_t>::is_always_lock_free, "the doorbell must be lock-free to be shared");

// The doorbell's operations are sequentially consistent, and so are the progress counters they
// guard (nccl_transport.cpp): a waiter that reads the bell before a ring and the counter after
// it then always sees the counter's new value, or sleeps on a bell that has already moved.
uint32_t doorbell_value(uint32_t* bell) { return std::atomic_ref<uint32_t>(*bell).load(); }

void ring_doorbell(uint32_t* bell) {
  std::atomic_ref<uint32_t>(*bell).fetch_add(1);
  // Not FUTEX_PRIVATE_FLAG: the word may be mapped by other processes.
  syscall(SYS_futex, bell, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void sleep_on_doorbell(uint32_t* bell, uint32_t seen, std::chrono::nanoseconds at_most) {
  if (at_most.count() <= 0) return;
  timespec relative{};
  relative.tv_sec = static_cast<time_t>(at_most.count() / 1'000'000'000);
  relative.tv_nsec = static_cast<long>(at_most.count() % 1'000'000'000);
  // EAGAIN (the value already moved), EINTR and ETIMEDOUT all mean: test the condition again.
  syscall(SYS_futex, bell, FUTEX_WAIT, seen, &relative, nullptr, 0);
}

}  // namespace ember::emu::nccl
