// Replicas on threads of one process, reducing over shared memory: how DataParallel runs on a
// machine without GPUs, and how it is tested.
// defines: ember::parallel::CpuCommunicator
#pragma once

#include <condition_variable>
#include <mutex>
#include <vector>

#include "ember/parallel/communicator.h"

namespace ember::parallel {

// `world_size` ranks, each driven by its own thread. A collective publishes every rank's tensors,
// waits until all ranks have, lets each rank reduce its own slice of the elements (so the work is
// shared and no rank reads a half-written result), then waits again before returning. The sum is
// taken in rank order, so the result is the same bit for bit on every rank and every run.
class CpuCommunicator final : public Communicator {
 public:
  explicit CpuCommunicator(int world_size);

  int world_size() const override { return world_size_; }
  std::vector<int> local_ranks() const override;
  using Communicator::all_reduce;
  void all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) override;
  void broadcast(int rank, std::vector<Tensor>& tensors, int root = 0) override;
  void barrier(int rank) override;

 private:
  void check_rank(int rank, const char* op) const;
  // Blocks until every rank has arrived; the generation counter makes it reusable.
  void wait_for_all();

  int world_size_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::vector<std::vector<Tensor>*> published_;
};

}  // namespace ember::parallel
