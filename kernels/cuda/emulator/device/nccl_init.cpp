// ember's emulated NCCL: making and freeing communicators, and what they say about themselves
// (ncclGetUniqueId, ncclCommInitRank, ncclCommInitAll, ncclCommDestroy, ncclCommCount, ...).
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <nccl.h>

#include "ember/kernels/cuda/emulator/device/device.h"
#include "ember/kernels/cuda/emulator/device/nccl_comm.h"
#include "ember/kernels/cuda/emulator/device/nccl_errors.h"
#include "ember/kernels/cuda/emulator/device/nccl_group.h"

using namespace ember::emu::nccl;
namespace device = ember::emu::device;

namespace {

// An ncclUniqueId holds a clique name from new_clique_name(), NUL-terminated, zero-padded.
constexpr char kIdPrefix[] = "/ember-nccl-";

std::string clique_of(const ncclUniqueId& id) {
  const char* end = static_cast<const char*>(std::memchr(id.internal, '\0', sizeof id.internal));
  const std::string name(id.internal, end ? static_cast<size_t>(end - id.internal) : sizeof id.internal);
  if (end == nullptr || name.rfind(kIdPrefix, 0) != 0) {
    throw ApiError(ncclInvalidArgument, "commId is not an id from ncclGetUniqueId (expected \"" +
                                            std::string(kIdPrefix) + "...\", got " +
                                            (name.empty() ? std::string("all zero bytes") : "\"" + name + "\"") +
                                            "); was it broadcast to every rank?");
  }
  return name;
}

void check_device(int d, const char* what) {
  const int n = device::device_count();
  if (d < 0 || d >= n) {
    throw ApiError(ncclInvalidArgument, std::string(what) + " cuda:" + std::to_string(d) + " does not exist (" +
                                            std::to_string(n) + " emulated GPUs; EMBER_EMULATED_GPUS sets how many)");
  }
}

ncclComm_t make_handle(std::shared_ptr<Communicator> state) {
  auto* comm = new ncclComm{std::move(state)};
  register_comm(comm);
  return comm;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  return api_call("ncclGetVersion", [&] {
    if (version == nullptr) throw ApiError(ncclInvalidArgument, "version is null");
    *version = NCCL_VERSION_CODE;
  });
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return api_call("ncclGetUniqueId", [&] {
    if (uniqueId == nullptr) throw ApiError(ncclInvalidArgument, "uniqueId is null");
    const std::string name = new_clique_name();
    static_assert(sizeof uniqueId->internal >= 64, "a clique name needs up to 64 bytes");
    std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
    std::memcpy(uniqueId->internal, name.c_str(), name.size() + 1);
  });
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return api_call("ncclCommInitRank", [&] {
    if (comm == nullptr) throw ApiError(ncclInvalidArgument, "comm is null");
    if (nranks < 1 || rank < 0 || rank >= nranks) {
      throw ApiError(ncclInvalidArgument, "rank " + std::to_string(rank) + " is out of range for nranks " +
                                              std::to_string(nranks));
    }
    const std::string clique = clique_of(commId);
    const int d = device::current_device();
    check_device(d, "the current device");
    auto state = std::make_shared<Communicator>(std::make_unique<Endpoint>(clique, nranks, rank), d);
    if (in_group()) {
      wait_at_group_end(state);  // so that one thread can initialise several ranks in a group
    } else {
      state->wait_for_peers();
    }
    *comm = make_handle(std::move(state));
  });
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return api_call("ncclCommInitAll", [&] {
    if (comms == nullptr) throw ApiError(ncclInvalidArgument, "comms is null");
    if (ndev < 1) throw ApiError(ncclInvalidArgument, "ndev is " + std::to_string(ndev) + ", expected at least 1");
    std::vector<int> devices;
    std::set<int> seen;
    for (int r = 0; r < ndev; ++r) {
      const int d = devlist ? devlist[r] : r;
      check_device(d, ("devlist[" + std::to_string(r) + "]").c_str());
      if (!seen.insert(d).second) {
        throw ApiError(ncclInvalidUsage, "devlist lists cuda:" + std::to_string(d) + " twice (one rank per device)");
      }
      devices.push_back(d);
    }
    // Every rank joins before any waits: they are all on this thread.
    const std::string clique = new_clique_name();
    std::vector<std::shared_ptr<Communicator>> states;
    for (int r = 0; r < ndev; ++r) {
      states.push_back(std::make_shared<Communicator>(std::make_unique<Endpoint>(clique, ndev, r), devices[r]));
    }
    for (auto& state : states) state->wait_for_peers();
    for (int r = 0; r < ndev; ++r) comms[r] = make_handle(std::move(states[r]));
  });
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return api_call("ncclCommDestroy", [&] {
    if (comm == nullptr) return;  // as NCCL: nothing to free
    // A handle destroyed twice is an error, not a double free.
    if (!unregister_comm(comm)) throw ApiError(ncclInvalidArgument, not_live(comm));
    // The state lives on in the collectives still queued on streams; the last one frees it, and
    // the endpoint then tells the peers that this rank has left.
    delete comm;
  });
}

// Nothing of a collective can be cancelled midway on the emulated device: as ncclCommDestroy.
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return api_call("ncclCommGetAsyncError", [&] {
    if (asyncError == nullptr) throw ApiError(ncclInvalidArgument, "asyncError is null");
    *asyncError = live_communicator(comm)->async_error();
  });
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return api_call("ncclCommCount", [&] {
    if (count == nullptr) throw ApiError(ncclInvalidArgument, "count is null");
    *count = live_communicator(comm)->nranks();
  });
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return api_call("ncclCommCuDevice", [&] {
    if (device == nullptr) throw ApiError(ncclInvalidArgument, "device is null");
    *device = live_communicator(comm)->device();
  });
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return api_call("ncclCommUserRank", [&] {
    if (rank == nullptr) throw ApiError(ncclInvalidArgument, "rank is null");
    *rank = live_communicator(comm)->rank();
  });
}
