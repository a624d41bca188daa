// NcclCommunicator in a build without CUDA: the class exists so that DataParallel and
// init_distributed need no #if, and building one throws the build's one "no CUDA" error. (Such a
// build has no CUDA device, so DataParallel's device checks refuse CUDA replicas before this.)
#include "ember/kernels/cuda_unavailable.h"
#include "ember/parallel/nccl_communicator.h"

namespace ember::parallel {

struct NcclCommunicator::Rank {};

NcclCommunicator::NcclCommunicator(const std::vector<Device>&) { kernels::cuda_not_built("NcclCommunicator"); }
NcclCommunicator::NcclCommunicator(const NcclUniqueId&, int, int, Device) {
  kernels::cuda_not_built("NcclCommunicator");
}
NcclCommunicator::~NcclCommunicator() = default;
NcclUniqueId NcclCommunicator::new_unique_id() { kernels::cuda_not_built("NcclCommunicator::new_unique_id"); }
std::vector<int> NcclCommunicator::local_ranks() const { return {}; }
NcclCommunicator::Rank& NcclCommunicator::local(int, const char* op) const { kernels::cuda_not_built(op); }
Device NcclCommunicator::device(int) const { kernels::cuda_not_built("NcclCommunicator::device"); }
std::unique_ptr<Work> NcclCommunicator::all_reduce_async(int, std::vector<Tensor>, ReduceOp) {
  kernels::cuda_not_built("all_reduce");
}
void NcclCommunicator::all_reduce(int, std::vector<Tensor>&, ReduceOp) { kernels::cuda_not_built("all_reduce"); }
void NcclCommunicator::broadcast(int, std::vector<Tensor>&, int) { kernels::cuda_not_built("broadcast"); }
void NcclCommunicator::barrier(int) { kernels::cuda_not_built("barrier"); }

}  // namespace ember::parallel
