// CUDA tensors across GPUs through NCCL: one process driving several GPUs, or one process per
// GPU with NCCL's unique id carried by MPI (parallel/distributed.h does that).
// defines: ember::parallel::NcclCommunicator, NcclUniqueId
//
// This header does not include <nccl.h>; its .cpp exists only in builds with CUDA.
#pragma once

#include <array>
#include <vector>

#include "ember/core/device.h"
#include "ember/parallel/communicator.h"

namespace ember::parallel {

// NCCL's ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128), as plain bytes that MPI can broadcast.
using NcclUniqueId = std::array<char, 128>;

// Note [NCCL streams]: each local rank owns a CUDA stream created non-blocking, so that it never
// synchronises implicitly with the device's legacy default stream. A collective records an event
// on the rank's current compute stream (cuda::current_stream(device)), makes the NCCL stream wait
// for it, queues the NCCL call there, records a second event, and (at wait(), or at once for
// the blocking calls) makes the compute stream wait for that. The host never waits, except in
// barrier(). Every NCCL call sits inside ncclGroupStart / ncclGroupEnd.
class NcclCommunicator final : public Communicator {
 public:
  // One process, one rank per device (ncclCommInitAll): rank r drives devices[r]. Each rank's
  // collectives are called from its own thread. Throws ember::Error for a device that is not a
  // CUDA device or listed twice, or when NCCL fails.
  explicit NcclCommunicator(const std::vector<Device>& devices);
  // One rank of a job of `world_size` processes (ncclCommInitRank), on `device`. Every rank must
  // pass the same `id`, made by new_unique_id() on one of them.
  NcclCommunicator(const NcclUniqueId& id, int world_size, int rank, Device device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  static NcclUniqueId new_unique_id();

  int world_size() const override { return world_size_; }
  std::vector<int> local_ranks() const override;
  // The device of a local rank.
  Device device(int rank) const;

  // Tensors must be contiguous float32/float64 tensors on device(rank). See Note [NCCL streams].
  using Communicator::all_reduce;
  void all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) override;
  std::unique_ptr<Work> all_reduce_async(int rank, std::vector<Tensor> tensors,
                                         ReduceOp op = ReduceOp::Sum) override;
  void broadcast(int rank, std::vector<Tensor>& tensors, int root = 0) override;
  // A one-element all-reduce, then the host waits for it on this rank's stream.
  void barrier(int rank) override;

 private:
  struct Rank;
  Rank& local(int rank, const char* op) const;

  int world_size_ = 0;
  std::vector<Rank*> ranks_;  // this process's ranks
};

}  // namespace ember::parallel
