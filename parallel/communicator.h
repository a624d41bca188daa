// Collective operations between the replicas of a data-parallel model.
// defines: ember::parallel::Communicator, ReduceOp, Work
//
// A communicator connects `world_size()` ranks. A process drives some of them (local_ranks():
// all of them for CpuCommunicator and a single-process NcclCommunicator, its own one for
// MpiCommunicator and a per-process NcclCommunicator). Every rank calls each collective in the
// same order with tensors of the same shapes and dtypes, each rank from its own thread when a
// process drives several.
//
// Note [Collective completion]: "done" means done in this rank's order of work. For CPU tensors
// that is the host: the data is final when the call (or Work::wait) returns. For CUDA tensors
// (NcclCommunicator) it is the device's current stream: the collective runs on the
// communicator's own stream, ordered after the work already queued on the current stream by a
// CUDA event, and the current stream waits for it by another event; the host does not wait.
#pragma once

#include <memory>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::parallel {

enum class ReduceOp { Sum, Average };

// A collective that was started and may still be running. wait() returns when its result may be
// used by this rank's later work (see Note [Collective completion]); calling it again is a no-op.
// Destroying a Work that was not waited for waits for it.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int world_size() const = 0;
  // The ranks this process drives, in increasing order.
  virtual std::vector<int> local_ranks() const = 0;

  // In place on `rank`'s tensors: every rank ends with the element-wise sum (or mean) over ranks.
  // Requires the same number of tensors, with the same shapes and dtypes (float32 or float64),
  // on every rank, contiguous, on the device the communicator expects for `rank`.
  virtual void all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) = 0;
  // One flat buffer: the same as all_reduce on {buffer}.
  void all_reduce(int rank, Tensor& buffer, ReduceOp op = ReduceOp::Sum);
  // Starts all_reduce and returns without waiting for it where the communicator can (NCCL: the
  // collective is queued; MPI: MPI_Iallreduce). The tensors must stay alive and unchanged until
  // wait() returned. The default runs all_reduce now and returns finished work.
  virtual std::unique_ptr<Work> all_reduce_async(int rank, std::vector<Tensor> tensors,
                                                 ReduceOp op = ReduceOp::Sum);
  // In place: every rank's tensors become a copy of `root`'s.
  virtual void broadcast(int rank, std::vector<Tensor>& tensors, int root = 0) = 0;
  // Returns on each rank once every rank has entered it (for CUDA ranks: once the work queued
  // before it on every rank's current stream has finished).
  virtual void barrier(int rank) = 0;
};

}  // namespace ember::parallel
