// ember's emulated NCCL: ncclGroupStart / ncclGroupEnd, per host thread. Collectives need no
// deferral inside a group (each is queued on its rank's asynchronous stream as it is called), so a
// group only defers the wait of ncclCommInitRank, letting one thread initialise several ranks.
// defines: ember::emu::nccl::{in_group, wait_at_group_end}
#pragma once

#include <memory>

#include "ember/kernels/cuda/emulator/device/nccl_comm.h"

namespace ember::emu::nccl {

// Whether the calling thread is between ncclGroupStart and its matching ncclGroupEnd.
bool in_group();
// Makes the outermost ncclGroupEnd of this thread wait until every rank of `comm` has joined.
void wait_at_group_end(std::shared_ptr<Communicator> comm);

}  // namespace ember::emu::nccl
