// Checks for CUDA runtime calls and kernel launches, shared by kernels/, core/ and parallel/: a
// failure throws ember::Error naming the call (or the op that launched the kernel), the error
// string and file:line.
// defines: EMBER_CUDA_CHECK, EMBER_CUDA_LAUNCH_CHECK
//
// Note [Kernel faults]: a kernel that faults (an illegal address, a failed device assert) is
// reported by whatever CUDA call synchronises next, far from the launch. So every launch records
// its op's name, and an error from a later call names the last op launched on that thread: the
// fault is in that kernel or one queued before it. EMBER_CUDA_SYNC=1 synchronises after every
// launch (as CUDA_LAUNCH_BLOCKING=1 does), which pins the fault on the exact op; it cannot be
// used while a CUDA graph is being captured.
#pragma once

#include <cstdlib>
#include <string>

#include <cuda_runtime_api.h>

#include "ember/common/error.h"

namespace ember::cuda_check {

inline const char*& last_launched_op() {
  thread_local const char* op = nullptr;
  return op;
}

inline bool sync_after_launch() {
  static const bool enabled = [] {
    const char* value = std::getenv("EMBER_CUDA_SYNC");
    return value != nullptr && std::string(value) == "1";
  }();
  return enabled;
}

// Errors that come from a kernel that already ran, not from the call that returned them.
inline bool is_kernel_fault(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

inline std::string fault_origin(cudaError_t status) {
  if (!is_kernel_fault(status)) return "";
  const char* op = last_launched_op();
  return ember::detail::str("; a kernel faulted: the last op to launch one on this thread was ",
                            op ? op : "(none recorded)",
                            " (the fault is in it or in one queued before it; rerun with "
                            "EMBER_CUDA_SYNC=1 to check after every launch)");
}

// A failed runtime call also leaves its error as the thread's last error. The exception reports
// it, so it is cleared here: else the next launch's check (cudaGetLastError) would report it
// again, as that kernel's failure. (A sticky error, from a fault, stays whatever is read.)
[[noreturn]] inline void throw_call_error(cudaError_t status, const char* call, const char* file, int line) {
  const std::string message = cudaGetErrorString(status);
  cudaGetLastError();
  throw ::ember::Error(::ember::detail::str("CUDA error: ", call, " failed: ", message,
                                            fault_origin(status), " (", file, ":", line, ")"));
}

inline void check_launch(const char* op, const char* file, int line) {
  last_launched_op() = op;
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess && sync_after_launch()) status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    throw ::ember::Error(::ember::detail::str(op, ": CUDA kernel launch failed: ", cudaGetErrorString(status),
                                              " (", file, ":", line, ")"));
  }
}

}  // namespace ember::cuda_check

#define EMBER_CUDA_CHECK(call)                                                          \
  do {                                                                                  \
    cudaError_t ember_cuda_status = (call);                                             \
    if (ember_cuda_status != cudaSuccess) {                                             \
      ::ember::cuda_check::throw_call_error(ember_cuda_status, #call, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)

// Put right after a <<<...>>> launch: a bad configuration (too many threads, too much shared
// memory) fails here, naming `op`; faults inside the kernel surface later (Note [Kernel faults]).
#define EMBER_CUDA_LAUNCH_CHECK(op) ::ember::cuda_check::check_launch(op, __FILE__, __LINE__)
