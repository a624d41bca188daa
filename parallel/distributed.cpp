#include "ember/parallel/distributed.h"

#include "ember/common/error.h"
#include "ember/core/cuda/runtime.h"
#include "ember/parallel/nccl_communicator.h"
#ifdef EMBER_WITH_MPI  // mpi_communicator.h names MPI's types: it exists only where MPI was found
#include "ember/parallel/mpi_communicator.h"
#endif

namespace ember::parallel {

bool has_mpi() {
#ifdef EMBER_WITH_MPI
  return true;
#else
  return false;
#endif
}

Distributed init_distributed(bool use_cuda) {
#ifndef EMBER_WITH_MPI
  (void)use_cuda;
  throw Error("init_distributed: this build of ember has no MPI (install libopenmpi-dev and configure with "
              "-DEMBER_MPI=ON)");
#else
  auto mpi = std::make_shared<MpiCommunicator>();
  Distributed d;
  d.rank = mpi->rank();
  d.world_size = mpi->world_size();
  d.local_rank = mpi->local_rank();
  if (!use_cuda) {
    d.comm = mpi;
    return d;
  }
  // A build without CUDA has no device: the check below says so.
  EMBER_CHECK(cuda::device_count() > 0, "init_distributed: GPUs were asked for but rank ", d.rank, " sees no CUDA device");
  d.device = Device::cuda(d.local_rank % cuda::device_count());
  NcclUniqueId id{};
  if (d.rank == 0) id = NcclCommunicator::new_unique_id();
  mpi->broadcast_bytes(id.data(), id.size(), 0);
  d.comm = std::make_shared<NcclCommunicator>(id, d.world_size, d.rank, d.device);
  return d;
#endif
}

}  // namespace ember::parallel
