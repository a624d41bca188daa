// ember's emulated NCCL: how its API calls fail. Each call runs its body through api_call(), which
// turns what the body throws into NCCL's result code and records the details, prefixed with the
// call's name, for ncclGetLastError (and, with NCCL_DEBUG=WARN or INFO, prints them to stderr, as
// NCCL's error strings suggest).
// defines: ember::emu::nccl::{ApiError, result_for, report, api_call}
#pragma once

#include <new>
#include <stdexcept>
#include <string>

#include <nccl.h>

#include "ember/kernels/cuda/emulator/device/nccl_transport_error.h"

namespace ember::emu::nccl {

// Thrown inside an API call's body: the call returns `result`.
struct ApiError : std::runtime_error {
  ApiError(ncclResult_t r, const std::string& details) : std::runtime_error(details), result(r) {}
  ncclResult_t result;
};

// The NCCL result for a transport failure: ncclSystemError for a system call or a timeout,
// ncclInvalidUsage for ranks that disagree, ncclRemoteError for a peer that exited or left.
ncclResult_t result_for(TransportError::Kind kind);

// Records "<call>: <details>" as the process's last error and returns `result`.
ncclResult_t report(const char* call, ncclResult_t result, const std::string& details);

template <typename Body>
ncclResult_t api_call(const char* call, Body&& body) {
  try {
    body();
    return ncclSuccess;
  } catch (const ApiError& e) {
    return report(call, e.result, e.what());
  } catch (const TransportError& e) {
    return report(call, result_for(e.kind), e.what());
  } catch (const std::bad_alloc&) {
    return report(call, ncclSystemError, "out of host memory");
  } catch (const std::exception& e) {
    return report(call, ncclInternalError, e.what());
  }
}

}  // namespace ember::emu::nccl
