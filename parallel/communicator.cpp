#include "ember/parallel/communicator.h"

namespace ember::parallel {

namespace {

struct FinishedWork final : Work {
  void wait() override {}
};

}  // namespace

void Communicator::all_reduce(int rank, Tensor& buffer, ReduceOp op) {
  std::vector<Tensor> tensors{buffer};
  all_reduce(rank, tensors, op);
}

std::unique_ptr<Work> Communicator::all_reduce_async(int rank, std::vector<Tensor> tensors, ReduceOp op) {
  all_reduce(rank, tensors, op);
  return std::make_unique<FinishedWork>();
}

}  // namespace ember::parallel
