// The check for MPI calls: a failure throws ember::Error naming the call, MPI's error string and
// file:line. (ember sets MPI_ERRORS_RETURN on its communicators so that errors come back here
// instead of aborting the job.)
// defines: EMBER_MPI_CHECK
#pragma once

// Only the C API: OpenMPI's C++ bindings are deprecated and warn.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "ember/common/error.h"

namespace ember::parallel::detail {
inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "unknown MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}
}  // namespace ember::parallel::detail

#define EMBER_MPI_CHECK(call)                                                                      \
  do {                                                                                             \
    int ember_mpi_status = (call);                                                                 \
    if (ember_mpi_status != MPI_SUCCESS) {                                                         \
      throw ::ember::Error(::ember::detail::str("MPI error: ", #call, " failed: ",                 \
                                                ::ember::parallel::detail::mpi_error_string(       \
                                                    ember_mpi_status),                             \
                                                " (", __FILE__, ":", __LINE__, ")"));              \
    }                                                                                              \
  } while (0)
