// Collective operations between the replicas of a data-parallel model.
// defines: ember::parallel::Communicator, ReduceOp
//
// A communicator connects `world_size()` ranks. Every rank calls each collective in the same
// order with tensors of the same shapes; a collective returns once this rank's part is done.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ember::parallel {

enum class ReduceOp { Sum, Average };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int world_size() const = 0;

  // In place on `rank`'s tensors: every rank ends with the element-wise sum (or mean) over ranks.
  // Requires the same number of tensors, with the same shapes and dtypes, on every rank.
  virtual void all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum) = 0;
  // In place: every rank's tensors become a copy of `root`'s.
  virtual void broadcast(int rank, std::vector<Tensor>& tensors, int root = 0) = 0;
  // Returns on each rank once every rank has entered it.
  virtual void barrier(int rank) = 0;
};

}  // namespace ember::parallel
