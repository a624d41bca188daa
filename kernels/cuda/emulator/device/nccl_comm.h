// ember's emulated NCCL: what an ncclComm_t points to. The state is shared with the collectives
// queued on streams, so ncclCommDestroy may free the handle while its work still runs.
// defines: ncclComm, ember::emu::nccl::{Communicator, register_comm, unregister_comm,
//          live_communicator, not_live}
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include <nccl.h>

#include "ember/kernels/cuda/emulator/device/nccl_transport.h"

namespace ember::emu::nccl {

class Communicator {
 public:
  Communicator(std::unique_ptr<Endpoint> endpoint, int device) : endpoint_(std::move(endpoint)), device_(device) {}

  int rank() const { return endpoint_->rank(); }
  int nranks() const { return endpoint_->nranks(); }
  int device() const { return device_; }
  // "rank 1 of 2 on cuda:1": how errors name the communicator.
  std::string describe() const;

  // Runs `collective` on the endpoint, one at a time whatever stream queued it (the transport
  // takes one collective at a time).
  template <typename F>
  void run(F&& collective) {
    std::lock_guard lock(running_);
    collective(*endpoint_);
  }
  // For ncclGroupEnd after ncclCommInitRank inside a group.
  void wait_for_peers() { endpoint_->wait_for_peers(); }

  // The first failure of a queued collective, kept for ncclCommGetAsyncError and reported by
  // every later call on the communicator; ncclSuccess and "" while none.
  void record_async_error(ncclResult_t result, const std::string& details);
  ncclResult_t async_error(std::string* details = nullptr) const;

 private:
  std::unique_ptr<Endpoint> endpoint_;
  int device_;
  std::mutex running_;
  mutable std::mutex error_mutex_;
  ncclResult_t async_error_ = ncclSuccess;
  std::string async_details_;
};

// The live handles, so that a destroyed or garbage ncclComm_t is an error, not a crash.
void register_comm(ncclComm_t comm);
// False when `comm` was not live (destroyed already, or never made).
bool unregister_comm(ncclComm_t comm);
// The communicator behind `comm`; throws ApiError(ncclInvalidArgument) for a null or dead handle.
std::shared_ptr<Communicator> live_communicator(ncclComm_t comm);
// "comm 0x... is not a live communicator (...)".
std::string not_live(ncclComm_t comm);

}  // namespace ember::emu::nccl

struct ncclComm {
  std::shared_ptr<ember::emu::nccl::Communicator> state;
};
