// ember's emulated NCCL: result codes, their strings and the last error (nccl_errors.h).
#include "ember/kernels/cuda/emulator/device/nccl_errors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace ember::emu::nccl {

namespace {

// One last error per process, as in NCCL: a failure on a stream worker shows up here too.
struct LastError {
  std::mutex mutex;
  std::string details;
};

LastError& last_error() {
  static LastError error;
  return error;
}

bool print_warnings() {
  static const bool on = [] {
    const char* level = std::getenv("NCCL_DEBUG");
    return level != nullptr && (std::strcmp(level, "WARN") == 0 || std::strcmp(level, "INFO") == 0 ||
                                std::strcmp(level, "TRACE") == 0);
  }();
  return on;
}

}  // namespace

ncclResult_t result_for(TransportError::Kind kind) {
  switch (kind) {
    case TransportError::Kind::system:
    case TransportError::Kind::timeout: return ncclSystemError;
    case TransportError::Kind::usage: return ncclInvalidUsage;
    case TransportError::Kind::peer_lost: return ncclRemoteError;
  }
  return ncclInternalError;
}

ncclResult_t report(const char* call, ncclResult_t result, const std::string& details) {
  const std::string text = std::string(call) + ": " + details;
  if (print_warnings()) std::fprintf(stderr, "ember emulated NCCL WARN %s\n", text.c_str());
  LastError& last = last_error();
  std::lock_guard lock(last.mutex);
  last.details = text;
  return result;
}

}  // namespace ember::emu::nccl

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=WARN for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=WARN for details)";
    case ncclInternalError: return "internal error (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclNumResults: break;
  }
  return "unknown result code";
}

const char* ncclGetLastError(ncclComm_t) {
  // A copy per thread: another thread's failure may replace the process's last error meanwhile.
  thread_local std::string copy;
  auto& last = ember::emu::nccl::last_error();
  std::lock_guard lock(last.mutex);
  copy = last.details;
  return copy.c_str();
}
