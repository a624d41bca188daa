// The check for NCCL calls: a failure throws ember::Error naming the call, ncclGetErrorString
// (and NCCL's last error message when it has one) and file:line.
// defines: EMBER_NCCL_CHECK
#pragma once

#include <nccl.h>

#include "common/error.h"

#define EMBER_NCCL_CHECK(call)                                                                     \
  do {                                                                                             \
    ncclResult_t ember_nccl_status = (call);                                                       \
    if (ember_nccl_status != ncclSuccess) {                                                        \
      throw ::ember::Error(::ember::detail::str("NCCL error: ", #call, " failed: ",                \
                                                ncclGetErrorString(ember_nccl_status), " (",       \
                                                __FILE__, ":", __LINE__, ")"));                    \
    }                                                                                              \
  } while (0)
