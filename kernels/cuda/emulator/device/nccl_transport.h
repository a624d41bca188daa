// ember's emulated NCCL: the transport under ncclCommInitRank / ncclAllReduce / ncclBroadcast.
// The ranks of a communicator (a "clique") share one POSIX shared memory segment named after the
// unique id, so they may be threads of one process or separate processes (mpirun); each rank
// holds an Endpoint on it. No CUDA here: the buffers are plain memory, which the emulated device's
// stream workers can read and write directly, and the transport is unit-tested on its own
// (tests/emulated_device/test_nccl_transport.cpp).
//
// Note [The clique's protocol] (how a collective moves through the segment):
// Each rank owns two slots of `chunk_bytes` in the segment and a counter, `posted`, of the chunks
// it has put into them. A collective of N bytes is cut into ceil(N / chunk_bytes) chunks (at
// least one), and the ranks' k-th chunks (k counting every chunk since the clique formed) meet in
// slot k % 2:
//   1. write the collective's descriptor and (for an all-reduce, or at a broadcast's root) the
//      chunk's data into the own slot; posted = k + 1;
//   2. wait until every rank has posted chunk k; check that all descriptors match (sequence
//      number, operation, type, count, root, chunk index), else every rank fails with
//      TransportError::usage naming both collectives;
//   3. an all-reduce reduces the ranks' slots in rank order, rank 0 first, so every rank computes
//      bit-identical results; a broadcast copies the root's slot.
// Two slots let a rank post chunk k + 1 while slower ranks still read chunk k, and they are
// enough: a rank posts chunk k + 2 (into chunk k's slot) only after it saw every rank post chunk
// k + 1, which each rank does only after it has read chunk k. A rank that is late only delays
// the others; one that never comes makes them fail after the timeout, one whose process exited or
// whose endpoint was destroyed makes them fail at once (TransportError::peer_lost), and a rank
// that fails marks the segment aborted so that its peers fail promptly with its reason instead of
// waiting for their own timeout.
//
// Note [The segment's lifetime]: the first rank to arrive creates the segment (zero-filled is its
// initial state), the last rank to join removes its name (shm_unlink), and the memory goes away
// when the last rank unmaps it. So a crash after every rank has joined leaks nothing. A crash
// before that leaves /dev/shm/ember-nccl-* behind until reboot (the ranks still waiting time out
// and remove the name); `rm /dev/shm/ember-nccl-*` clears such leftovers when no job runs.
// defines: ember::emu::nccl::{TransportOptions, Endpoint, new_clique_name, default_timeout}
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ember/kernels/cuda/emulator/device/nccl_reduce.h"
#include "ember/kernels/cuda/emulator/device/nccl_shared_memory.h"
#include "ember/kernels/cuda/emulator/device/nccl_transport_error.h"

namespace ember::emu::nccl {

// EMBER_EMULATED_NCCL_TIMEOUT (seconds, default 300): how long a rank waits for a peer at
// init or in a collective before failing.
std::chrono::milliseconds default_timeout();

struct TransportOptions {
  size_t chunk_bytes = size_t{1} << 20;  // per slot; a multiple of 64. All ranks must agree.
  std::chrono::milliseconds timeout = default_timeout();
};

// A fresh clique name, unique across processes and time ("/ember-nccl-<pid>-<time>-<count>-
// <random>", under 64 characters): what ncclGetUniqueId puts into its id.
std::string new_clique_name();

struct SegmentLayout;  // nccl_segment_layout.h
struct Descriptor;

// One rank's attachment to a clique. One collective at a time (the caller serialises); the ranks'
// collectives run concurrently on their own threads or processes.
class Endpoint {
 public:
  // Maps the clique's segment (creating it if this rank is the first) and registers `rank`. Does
  // not wait for the others: wait_for_peers() does. Throws TransportError: `usage` for a rank out
  // of range, a rank that joined twice, or ranks that disagree on nranks or chunk_bytes.
  Endpoint(const std::string& clique, int nranks, int rank, TransportOptions options = {});
  // Marks the rank as gone, so peers still waiting for it fail at once; removes the clique's name
  // if not every rank had joined (a clique that can no longer form).
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Blocks until every rank has joined. Throws TransportError on timeout, naming missing ranks.
  void wait_for_peers();

  // recv = send[rank 0] (op) send[rank 1] (op) ... on every rank; send == recv is in-place.
  void all_reduce(const void* send, void* recv, size_t count, Scalar scalar, Reduction reduction);
  // recv = the root's send on every rank; `send` is read on the root only.
  void broadcast(const void* send, void* recv, size_t count, Scalar scalar, int root);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::string& clique() const { return memory_.name(); }
  // How many collectives this rank has run (its sequence number for the next is this + 1).
  uint64_t collectives_run() const { return sequence_; }

 private:
  struct Collective;
  void run(const Collective& c, const std::byte* send, std::byte* recv);
  void move_chunk(const Collective& c, uint64_t chunk, const std::byte* send, std::byte* recv);
  void check_descriptors(const Descriptor& mine, int slot);
  // Waits until `laggard()` returns -1; until then it returns a rank being waited for.
  void wait_until(const std::function<int()>& laggard, const std::function<std::string()>& waiting_for);
  [[noreturn]] void fail(TransportError::Kind kind, const std::string& details);
  void throw_if_aborted();

  SharedMemory memory_;
  std::unique_ptr<SegmentLayout> layout_;
  int nranks_;
  int rank_;
  TransportOptions options_;
  uint64_t sequence_ = 0;     // collectives run
  uint64_t chunks_done_ = 0;  // chunks moved since the clique formed
  std::optional<TransportError> broken_;  // after a failure, every later call throws it again
};

}  // namespace ember::emu::nccl
