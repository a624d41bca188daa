// Joining a multi-process job started by mpirun: which rank this is, its device, and the
// communicator DataParallel needs (MPI for CPU replicas, NCCL with its id carried by MPI for GPUs).
// defines: ember::parallel::Distributed, init_distributed, has_mpi
#pragma once

#include <memory>

#include "ember/core/device.h"
#include "ember/parallel/communicator.h"

namespace ember::parallel {

struct Distributed {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;                  // among the processes on this host
  Device device = Device::cpu();       // this rank's device
  std::shared_ptr<Communicator> comm;  // for DataParallel(model, comm)
  bool is_root() const { return rank == 0; }
};

// True in a build with MPI (EMBER_WITH_MPI).
bool has_mpi();

// Initialises MPI (see Note [MPI lifetime] in parallel/mpi_communicator.h) and connects every
// rank. With use_cuda, rank r drives cuda:(local_rank % GPUs on this host) and the ranks talk
// NCCL: rank 0 makes the unique id and MPI broadcasts it to the others (ncclCommInitRank).
// Without, the ranks are CPU replicas reducing through MPI. Throws ember::Error in a build
// without MPI, or with use_cuda in a build without CUDA or on a host without a GPU.
Distributed init_distributed(bool use_cuda);

}  // namespace ember::parallel
