// ember's emulated NCCL: the clique transport (nccl_transport.h, Note [The clique's protocol]).
#include "ember/kernels/cuda/emulator/device/nccl_transport.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ember/kernels/cuda/emulator/device/nccl_doorbell.h"
#include "ember/kernels/cuda/emulator/device/nccl_segment_layout.h"

namespace ember::emu::nccl {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using Kind = TransportError::Kind;

enum class Operation : uint32_t { all_reduce = 0, broadcast = 1 };

struct Endpoint::Collective {
  Operation operation;
  size_t count;
  Scalar scalar;
  Reduction reduction;  // all-reduce only
  int root;             // broadcast only
};

namespace {

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free && std::atomic_ref<int32_t>::is_always_lock_free,
              "the counters shared between processes must be lock-free");

// Sequentially consistent, as nccl_doorbell.cpp requires of the counters it guards.
template <typename T>
T load(T& shared) {
  return std::atomic_ref<T>(shared).load();
}
template <typename T>
void store(T& shared, T value) {
  std::atomic_ref<T>(shared).store(value);
}

// How often a waiting rank checks that the process it waits for still exists.
constexpr milliseconds kLivenessInterval{100};

// True when `pid` (another process) no longer runs: gone, or a zombie that its parent has not
// reaped yet (a rank forked by a test, whose parent is busy waiting in a collective itself).
bool process_exited(int32_t pid) {
  if (pid <= 0 || pid == getpid()) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return false;
  char stat[512] = {};
  const size_t n = std::fread(stat, 1, sizeof stat - 1, file);
  std::fclose(file);
  // "pid (command) S ...": the state follows the last ')', as the command may hold any character.
  const char* close = static_cast<const char*>(memrchr(stat, ')', n));
  return close != nullptr && close + 2 < stat + n && close[2] == 'Z';
}

std::string seconds_text(milliseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g s", static_cast<double>(d.count()) / 1000.0);
  return text;
}

std::string describe(const Descriptor& d) {
  std::string text = "collective #" + std::to_string(d.sequence) + ": ";
  if (d.operation == static_cast<uint32_t>(Operation::all_reduce)) {
    text += std::string("all_reduce(") + reduction_name(static_cast<Reduction>(d.reduction)) + ", ";
  } else {
    text += "broadcast(root " + std::to_string(d.root) + ", ";
  }
  return text + std::to_string(d.count) + " " + scalar_name(static_cast<Scalar>(d.scalar)) + "), chunk " +
         std::to_string(d.chunk);
}

bool same(const Descriptor& a, const Descriptor& b) {
  return a.sequence == b.sequence && a.count == b.count && a.chunk == b.chunk && a.operation == b.operation &&
         a.scalar == b.scalar && a.reduction == b.reduction && a.root == b.root;
}

// Checks the shape before anything is created; returns the segment's size.
size_t checked_segment_bytes(const std::string& clique, int nranks, int rank, const TransportOptions& options) {
  if (clique.size() < 2 || clique.front() != '/' || clique.find('/', 1) != std::string::npos) {
    throw TransportError(Kind::usage, "clique name \"" + clique + "\": expected \"/name\" with no other '/'");
  }
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    throw TransportError(Kind::usage, "rank " + std::to_string(rank) + " is out of range for " +
                                          std::to_string(nranks) + " ranks");
  }
  if (options.chunk_bytes < 64 || options.chunk_bytes % 64 != 0 || options.chunk_bytes > (size_t{1} << 30)) {
    throw TransportError(Kind::usage, "chunk_bytes " + std::to_string(options.chunk_bytes) +
                                          ": expected a multiple of 64 from 64 to 1 GiB");
  }
  return SegmentLayout::bytes(nranks, options.chunk_bytes);
}

// Sets a header field to `value` if it is still zero (this rank is the first), else checks it.
void agree(uint32_t& field, uint32_t value, const char* what, int rank) {
  uint32_t found = 0;
  if (!std::atomic_ref<uint32_t>(field).compare_exchange_strong(found, value) && found != value) {
    throw TransportError(Kind::usage, "rank " + std::to_string(rank) + " joins with " + what + " " +
                                          std::to_string(value) + ", but the ranks before it joined with " +
                                          std::to_string(found));
  }
}

}  // namespace

std::chrono::milliseconds default_timeout() {
  const char* text = std::getenv("EMBER_EMULATED_NCCL_TIMEOUT");
  if (text == nullptr || *text == '\0') return std::chrono::seconds(300);
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0) || seconds > 1e7) {
    throw TransportError(Kind::usage, std::string("EMBER_EMULATED_NCCL_TIMEOUT=") + text +
                                          ": expected a number of seconds above 0");
  }
  return milliseconds(static_cast<int64_t>(seconds * 1000.0 + 0.5));
}

std::string new_clique_name() {
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  const uint64_t random = (static_cast<uint64_t>(device()) << 32) ^ device();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  char name[96];
  std::snprintf(name, sizeof name, "/ember-nccl-%x-%" PRIx64 "-%" PRIx64 "-%016" PRIx64,
                static_cast<unsigned>(getpid()),
                static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()),
                counter.fetch_add(1), random);
  return name;
}

Endpoint::Endpoint(const std::string& clique, int nranks, int rank, TransportOptions options)
    : memory_(clique, checked_segment_bytes(clique, nranks, rank, options)),
      layout_(std::make_unique<SegmentLayout>(memory_.data(), nranks, options.chunk_bytes)),
      nranks_(nranks),
      rank_(rank),
      options_(options) {
  SegmentHeader& header = *layout_->header;
  agree(header.nranks, static_cast<uint32_t>(nranks), "nranks", rank);
  agree(header.chunk_bytes, static_cast<uint32_t>(options.chunk_bytes), "chunk_bytes", rank);
  RankRecord& me = layout_->ranks[rank];
  uint32_t not_joined = 0;
  if (!std::atomic_ref<uint32_t>(me.joined).compare_exchange_strong(not_joined, 1)) {
    throw TransportError(Kind::usage, "rank " + std::to_string(rank) + " joined clique " + clique +
                                          " twice (two ranks were given the same number)");
  }
  store(me.pid, static_cast<int32_t>(getpid()));
  // See Note [The segment's lifetime]: every rank has the segment mapped once the last one joins.
  if (std::atomic_ref<uint32_t>(header.joined).fetch_add(1) + 1 == static_cast<uint32_t>(nranks)) memory_.unlink();
  ring_doorbell(&header.doorbell);
}

Endpoint::~Endpoint() {
  SegmentHeader& header = *layout_->header;
  store(layout_->ranks[rank_].left, uint32_t{1});
  ring_doorbell(&header.doorbell);
  if (load(header.joined) < static_cast<uint32_t>(nranks_)) {
    try {
      memory_.unlink();
    } catch (const TransportError&) {  // a destructor must not throw; the name stays behind
    }
  }
}

void Endpoint::wait_for_peers() {
  if (broken_) throw *broken_;
  wait_until(
      [&] {
        for (int q = 0; q < nranks_; ++q) {
          if (load(layout_->ranks[q].joined) == 0) return q;
        }
        return -1;
      },
      [&] {
        std::string missing;
        for (int q = 0; q < nranks_; ++q) {
          if (load(layout_->ranks[q].joined) == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(q);
        }
        return "join clique " + memory_.name() + " (missing: rank " + missing + " of " + std::to_string(nranks_) + ")";
      });
}

void Endpoint::all_reduce(const void* send, void* recv, size_t count, Scalar scalar, Reduction reduction) {
  run({Operation::all_reduce, count, scalar, reduction, 0}, static_cast<const std::byte*>(send),
      static_cast<std::byte*>(recv));
}

void Endpoint::broadcast(const void* send, void* recv, size_t count, Scalar scalar, int root) {
  if (root < 0 || root >= nranks_) {
    throw TransportError(Kind::usage, "broadcast: root " + std::to_string(root) + " is out of range for " +
                                          std::to_string(nranks_) + " ranks");
  }
  run({Operation::broadcast, count, scalar, Reduction::sum, root}, static_cast<const std::byte*>(send),
      static_cast<std::byte*>(recv));
}

void Endpoint::run(const Collective& c, const std::byte* send, std::byte* recv) {
  if (broken_) throw *broken_;
  const size_t element = scalar_bytes(c.scalar);
  if (c.count > SIZE_MAX / element) {
    throw TransportError(Kind::usage, "a collective of " + std::to_string(c.count) + " " + scalar_name(c.scalar) +
                                          " elements overflows size_t");
  }
  ++sequence_;
  const size_t per_chunk = options_.chunk_bytes / element;
  const uint64_t chunks = std::max<uint64_t>(1, (c.count + per_chunk - 1) / per_chunk);
  for (uint64_t i = 0; i < chunks; ++i) move_chunk(c, i, send, recv);
}

void Endpoint::move_chunk(const Collective& c, uint64_t chunk, const std::byte* send, std::byte* recv) {
  const uint64_t k = chunks_done_;
  const int slot = static_cast<int>(k % 2);
  const size_t element = scalar_bytes(c.scalar);
  const size_t per_chunk = options_.chunk_bytes / element;
  const size_t first = chunk * per_chunk;
  const size_t n = std::min(per_chunk, c.count - first);
  const size_t offset = first * element, bytes = n * element;
  const Descriptor mine{sequence_,
                        c.count,
                        chunk,
                        static_cast<uint32_t>(c.operation),
                        static_cast<uint32_t>(c.scalar),
                        static_cast<uint32_t>(c.reduction),
                        c.root};
  RankRecord& me = layout_->ranks[rank_];
  auto first_rank_not_posted = [&] {
    for (int q = 0; q < nranks_; ++q) {
      if (load(layout_->ranks[q].posted) < k + 1) return q;
    }
    return -1;
  };

  // 1. Post. Slot `slot` last held chunk k - 2, which every rank has read: each rank posted chunk
  // k - 1 after it had read chunk k - 2, and this rank saw them all post chunk k - 1.
  me.descriptors[slot] = mine;
  const bool contributes = c.operation == Operation::all_reduce || c.root == rank_;
  if (contributes && bytes > 0) std::memcpy(layout_->slot(rank_, slot), send + offset, bytes);
  store(me.posted, k + 1);
  ring_doorbell(&layout_->header->doorbell);
  // 2. Everyone's chunk k is there, and it is the same collective.
  wait_until(first_rank_not_posted, [&] { return "post " + describe(mine); });
  check_descriptors(mine, slot);
  // 3. Reduce in rank order (every rank the same arithmetic), or copy the root's. The next post
  // into this slot waits until every rank has posted chunk k + 1, so after this read.
  if (bytes > 0) {
    if (c.operation == Operation::all_reduce) {
      std::memcpy(recv + offset, layout_->slot(0, slot), bytes);
      for (int q = 1; q < nranks_; ++q) combine(recv + offset, layout_->slot(q, slot), n, c.scalar, c.reduction);
      if (c.reduction == Reduction::avg) finish_average(recv + offset, n, c.scalar, nranks_);
    } else {
      std::memcpy(recv + offset, layout_->slot(c.root, slot), bytes);
    }
  }
  chunks_done_ = k + 1;
}

void Endpoint::check_descriptors(const Descriptor& mine, int slot) {
  for (int q = 0; q < nranks_; ++q) {
    const Descriptor& theirs = layout_->ranks[q].descriptors[slot];
    if (!same(theirs, mine)) {
      fail(Kind::usage, "the ranks' collectives do not match: rank " + std::to_string(rank_) + " runs " +
                            describe(mine) + ", rank " + std::to_string(q) + " runs " + describe(theirs) +
                            " (every rank must issue the same collectives in the same order)");
    }
  }
}

void Endpoint::wait_until(const std::function<int()>& laggard, const std::function<std::string()>& waiting_for) {
  uint32_t* bell = &layout_->header->doorbell;
  const auto start = steady_clock::now();
  const auto deadline = start + options_.timeout;
  auto next_liveness_check = start + kLivenessInterval;
  for (;;) {
    const uint32_t seen = doorbell_value(bell);
    throw_if_aborted();
    const int q = laggard();
    if (q < 0) return;
    const RankRecord& peer = layout_->ranks[q];
    const std::string me = "rank " + std::to_string(rank_);
    const std::string them = "rank " + std::to_string(q);
    if (load(peer.left) != 0) {
      fail(Kind::peer_lost, them + " destroyed its communicator while " + me + " waited for it to " + waiting_for());
    }
    const auto now = steady_clock::now();
    if (now >= next_liveness_check) {
      const int32_t pid = load(peer.pid);
      if (process_exited(pid)) {
        fail(Kind::peer_lost, them + "'s process (pid " + std::to_string(pid) + ") exited while " + me +
                                  " waited for it to " + waiting_for());
      }
      next_liveness_check = now + kLivenessInterval;
    }
    if (now >= deadline) {
      const int32_t pid = load(peer.pid);
      fail(Kind::timeout, me + " waited " + seconds_text(options_.timeout) + " for " + them +
                              (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) + " to " +
                              waiting_for() + "; EMBER_EMULATED_NCCL_TIMEOUT (seconds) sets how long to wait");
    }
    sleep_on_doorbell(bell, seen, std::min(deadline, next_liveness_check) - now);
  }
}

void Endpoint::fail(Kind kind, const std::string& details) {
  SegmentHeader& header = *layout_->header;
  uint32_t no_owner = 0;
  if (std::atomic_ref<uint32_t>(header.abort_owner).compare_exchange_strong(no_owner, static_cast<uint32_t>(rank_) + 1)) {
    const size_t n = std::min(details.size(), sizeof header.abort_reason - 1);
    std::memcpy(header.abort_reason, details.data(), n);
    header.abort_reason[n] = '\0';
    store(header.abort_rank, static_cast<int32_t>(rank_));
    store(header.abort_kind, static_cast<uint32_t>(kind) + 1);  // after the reason: readers test this
    ring_doorbell(&header.doorbell);
  }
  broken_.emplace(kind, details);
  throw *broken_;
}

void Endpoint::throw_if_aborted() {
  SegmentHeader& header = *layout_->header;
  const uint32_t kind = load(header.abort_kind);
  if (kind == 0) return;
  const std::string reason(header.abort_reason, strnlen(header.abort_reason, sizeof header.abort_reason));
  broken_.emplace(static_cast<Kind>(kind - 1), "rank " + std::to_string(rank_) + " stops: rank " +
                                                   std::to_string(load(header.abort_rank)) +
                                                   " failed the communicator: " + reason);
  throw *broken_;
}

}  // namespace ember::emu::nccl
