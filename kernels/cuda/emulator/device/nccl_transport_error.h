// ember's emulated NCCL: the error its transport throws, with the kind of failure that decides
// which ncclResult_t the API returns for it (nccl_errors.cpp).
// defines: ember::emu::nccl::TransportError
#pragma once

#include <stdexcept>
#include <string>

namespace ember::emu::nccl {

struct TransportError : std::runtime_error {
  enum class Kind {
    system,     // a system call failed (shm_open, mmap, ...)                -> ncclSystemError
    usage,      // the ranks disagree (nranks, a rank joined twice, collectives that do not match)
                //                                                             -> ncclInvalidUsage
    timeout,    // a peer did not arrive within the timeout                  -> ncclSystemError
    peer_lost,  // a peer's process exited, or it destroyed its communicator -> ncclRemoteError
  };
  TransportError(Kind k, const std::string& details) : std::runtime_error(details), kind(k) {}
  Kind kind;
};

}  // namespace ember::emu::nccl
