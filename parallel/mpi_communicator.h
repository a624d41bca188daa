// CPU tensors across processes (and hosts) through MPI: one rank per process, launched by mpirun.
// defines: ember::parallel::MpiCommunicator
//
// This header does not include <mpi.h>; it exists only in builds with MPI (EMBER_WITH_MPI).
#pragma once

#include <cstddef>

#include "ember/parallel/communicator.h"

namespace ember::parallel {

// Note [MPI lifetime]: the first MpiCommunicator calls MPI_Init_thread (asking for
// MPI_THREAD_SERIALIZED: one thread at a time may call MPI) unless MPI is already initialised,
// and MPI_Finalize runs at process exit. The communicator duplicates MPI_COMM_WORLD, so ember's
// messages never mix with the program's own.
class MpiCommunicator final : public Communicator {
 public:
  // Throws ember::Error when MPI cannot be initialised.
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const override { return world_size_; }
  std::vector<int> local_ranks() const override { return {rank_}; }
  // The rank among the processes on this host (to pick this process's GPU), and their count.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // `rank` must be this process's rank(); tensors must be contiguous float32/float64 CPU tensors.
  using Communicator::all_reduce;
  void all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) override;
  // MPI_Iallreduce per tensor; wait() waits for all of them (and divides for Average).
  std::unique_ptr<Work> all_reduce_async(int rank, std::vector<Tensor> tensors,
                                         ReduceOp op = ReduceOp::Sum) override;
  void broadcast(int rank, std::vector<Tensor>& tensors, int root = 0) override;
  void barrier(int rank) override;
  // Raw bytes from `root` to every rank (NCCL's unique id travels this way).
  void broadcast_bytes(void* data, size_t bytes, int root = 0);

 private:
  void check_call(int rank, const char* op) const;

  struct Impl;
  Impl* impl_;
  int rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1;
};

}  // namespace ember::parallel
