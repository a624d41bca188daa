// The check for NCCL calls: a failure throws ember::Error naming the call, ncclGetErrorString
// (and NCCL's last error message when it has one) and file:line.
// defines: EMBER_NCCL_CHECK
#pragma once

#include <string>

#include <nccl.h>

#include "ember/common/error.h"

namespace ember::nccl_check {

// ncclGetLastError's message (NCCL 2.13+; it names what went wrong), or "" when it has none.
inline std::string last_error_details() {
  const char* details = ncclGetLastError(nullptr);
  return details != nullptr && details[0] != '\0' ? std::string(" (") + details + ")" : std::string();
}

}  // namespace ember::nccl_check

#define EMBER_NCCL_CHECK(call)                                                                     \
  do {                                                                                             \
    ncclResult_t ember_nccl_status = (call);                                                       \
    if (ember_nccl_status != ncclSuccess) {                                                        \
      throw ::ember::Error(::ember::detail::str("NCCL error: ", #call, " failed: ",                \
                                                ncclGetErrorString(ember_nccl_status),             \
                                                ::ember::nccl_check::last_error_details(), " (",   \
                                                __FILE__, ":", __LINE__, ")"));                    \
    }                                                                                              \
  } while (0)
