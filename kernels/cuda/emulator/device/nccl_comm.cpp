// ember's emulated NCCL: communicators and the registry of live handles (nccl_comm.h).
#include "ember/kernels/cuda/emulator/device/nccl_comm.h"

#include <cstdio>
#include <set>

#include "ember/kernels/cuda/emulator/device/nccl_errors.h"

namespace ember::emu::nccl {

namespace {

struct Registry {
  std::mutex mutex;
  std::set<ncclComm_t> live;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::string Communicator::describe() const {
  return "rank " + std::to_string(rank()) + " of " + std::to_string(nranks()) + " on cuda:" + std::to_string(device_);
}

void Communicator::record_async_error(ncclResult_t result, const std::string& details) {
  std::lock_guard lock(error_mutex_);
  if (async_error_ != ncclSuccess) return;
  async_error_ = result;
  async_details_ = details;
}

ncclResult_t Communicator::async_error(std::string* details) const {
  std::lock_guard lock(error_mutex_);
  if (details) *details = async_details_;
  return async_error_;
}

void register_comm(ncclComm_t comm) {
  std::lock_guard lock(registry().mutex);
  registry().live.insert(comm);
}

bool unregister_comm(ncclComm_t comm) {
  std::lock_guard lock(registry().mutex);
  return registry().live.erase(comm) == 1;
}

std::string not_live(ncclComm_t comm) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", static_cast<void*>(comm));
  return std::string("comm ") + text + " is not a live communicator (destroyed, or never initialised)";
}

std::shared_ptr<Communicator> live_communicator(ncclComm_t comm) {
  if (comm == nullptr) throw ApiError(ncclInvalidArgument, "comm is null");
  std::lock_guard lock(registry().mutex);
  if (registry().live.count(comm) == 0) throw ApiError(ncclInvalidArgument, not_live(comm));
  return comm->state;
}

}  // namespace ember::emu::nccl
