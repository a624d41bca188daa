// ember's emulated NCCL: group nesting per host thread (nccl_group.h).
#include "ember/kernels/cuda/emulator/device/nccl_group.h"

#include <vector>

#include "ember/kernels/cuda/emulator/device/nccl_errors.h"

namespace ember::emu::nccl {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<std::shared_ptr<Communicator>> joining;  // ncclCommInitRank calls inside the group
};

GroupState& group() {
  thread_local GroupState state;
  return state;
}

}  // namespace

bool in_group() { return group().depth > 0; }

void wait_at_group_end(std::shared_ptr<Communicator> comm) { group().joining.push_back(std::move(comm)); }

}  // namespace ember::emu::nccl

ncclResult_t ncclGroupStart() {
  ++ember::emu::nccl::group().depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  using namespace ember::emu::nccl;
  return api_call("ncclGroupEnd", [] {
    GroupState& g = group();
    if (g.depth == 0) throw ApiError(ncclInvalidUsage, "no ncclGroupStart to end on this thread");
    if (--g.depth > 0) return;
    const auto joining = std::move(g.joining);
    g.joining.clear();
    for (const auto& comm : joining) {
      try {
        comm->wait_for_peers();
      } catch (const TransportError& e) {
        comm->record_async_error(result_for(e.kind), std::string("ncclCommInitRank: ") + e.what());
        throw;
      }
    }
  });
}
