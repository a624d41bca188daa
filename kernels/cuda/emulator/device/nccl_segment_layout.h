// ember's emulated NCCL: what lies where in a clique's shared memory segment (Note [The clique's
// protocol] in nccl_transport.h). Every field starts at zero, the state of a segment that
// ftruncate has just created; the integer fields shared between ranks are only ever accessed
// through std::atomic_ref, the descriptors and slots only as the protocol's counters allow.
// defines: ember::emu::nccl::{Descriptor, SegmentHeader, RankRecord, SegmentLayout}
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::emu::nccl {

// What a rank says it is running with a chunk, checked against every other rank's.
struct Descriptor {
  uint64_t sequence;  // the collective's number on this rank: 1, 2, ...
  uint64_t count;     // elements in the whole collective
  uint64_t chunk;     // which chunk of it: 0, 1, ...
  uint32_t operation;  // 0 all-reduce, 1 broadcast
  uint32_t scalar;     // Scalar
  uint32_t reduction;  // Reduction (all-reduce only)
  int32_t root;        // broadcast only
};

struct alignas(64) SegmentHeader {
  uint32_t nranks;       // set by the first rank to join, checked by the others
  uint32_t chunk_bytes;  // likewise
  uint32_t joined;       // ranks that have joined
  uint32_t doorbell;     // nccl_doorbell.h: rung after every change of the counters
  uint32_t abort_owner;  // 0, or 1 + the rank that aborted the clique (it writes the reason)
  uint32_t abort_kind;   // 0, or 1 + its TransportError::Kind, stored after the reason
  int32_t abort_rank;
  uint32_t unused;
  char abort_reason[1024];
};

struct alignas(64) RankRecord {
  uint32_t joined;  // 1 once the rank has joined
  uint32_t left;    // 1 once its endpoint is destroyed
  int32_t pid;      // its process, to notice one that exited
  uint32_t unused;
  uint64_t posted;  // chunks written into its slots
  Descriptor descriptors[2];  // of the chunk in each of its two slots
};

// The segment: header, one record per rank, then two slots of chunk_bytes per rank.
struct SegmentLayout {
  static size_t bytes(int nranks, size_t chunk_bytes) {
    return slots_offset(nranks) + static_cast<size_t>(nranks) * 2 * chunk_bytes;
  }
  SegmentLayout(std::byte* base, int nranks, size_t chunk)
      : header(reinterpret_cast<SegmentHeader*>(base)),
        ranks(reinterpret_cast<RankRecord*>(base + sizeof(SegmentHeader))),
        slots(base + slots_offset(nranks)),
        chunk_bytes(chunk) {}

  std::byte* slot(int rank, int which) const {
    return slots + (static_cast<size_t>(rank) * 2 + static_cast<size_t>(which)) * chunk_bytes;
  }

  SegmentHeader* header;
  RankRecord* ranks;
  std::byte* slots;
  size_t chunk_bytes;

 private:
  static size_t slots_offset(int nranks) {
    return sizeof(SegmentHeader) + static_cast<size_t>(nranks) * sizeof(RankRecord);
  }
};

}  // namespace ember::emu::nccl
