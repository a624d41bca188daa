// The block runner: fibers, a ready queue ordered by the schedule, block barriers and warp
// collectives, and the diagnosis of barriers that cannot complete.
#include "ember/kernels/cuda/emulator/block_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "ember/kernels/cuda/emulator/fiber.h"

// The built-in variables, set before each resume (kernel_model.h).
thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace ember::emu {

namespace {

enum class State : uint8_t { Ready, AtBlockBarrier, AtWarpOp, Exited };

struct EmuThread {
  Fiber* fiber = nullptr;
  uint3 idx{};
  int linear = 0;
  State state = State::Ready;
  CallSite site{};
  WarpRequest* request = nullptr;  // on the fiber's stack while it waits in a warp collective
};

std::string idx_str(uint3 v) {
  std::ostringstream out;
  out << '(' << v.x << ',' << v.y << ',' << v.z << ')';
  return out.str();
}

// Fibers are kept per host thread and reused by every block and launch.
std::vector<std::unique_ptr<Fiber>>& fiber_pool() {
  thread_local std::vector<std::unique_ptr<Fiber>> pool;
  return pool;
}

class BlockRun;
thread_local BlockRun* active_run = nullptr;

class BlockRun {
 public:
  BlockRun(const LaunchConfig& config, KernelBody& body, const ScheduleSetting& schedule)
      : config_(config), body_(body), schedule_(schedule), rng_(schedule.seed) {
    const dim3 b = config.block;
    const int n = static_cast<int>(b.x * b.y * b.z);
    auto& pool = fiber_pool();
    while (static_cast<int>(pool.size()) < n) pool.push_back(std::make_unique<Fiber>(kFiberStackBytes));
    threads_.resize(n);
    for (int i = 0; i < n; ++i) {
      const unsigned u = static_cast<unsigned>(i);
      threads_[i].fiber = pool[i].get();
      threads_[i].linear = i;
      threads_[i].idx = uint3{u % b.x, u / b.x % b.y, u / (b.x * b.y)};
    }
    if (config.dynamic_shared_bytes > 0) {
      shared_.reset(new unsigned char[config.dynamic_shared_bytes]);
    }
  }

  void run_block(uint3 block) {
    block_ = block;
    // Dynamic shared memory starts as garbage on a GPU: all-ones bytes read as NaN (and -1), so a
    // kernel that reads what it did not write gets a wrong answer rather than a lucky zero.
    if (shared_) std::memset(shared_.get(), 0xff, config_.dynamic_shared_bytes);
    const int n = static_cast<int>(threads_.size());
    live_ = n;
    exited_ = 0;
    at_barrier_ = 0;
    ready_.clear();
    for (auto& t : threads_) {
      t.state = State::Ready;
      t.request = nullptr;
      t.fiber->reset(&thread_main, &t);
    }
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    if (schedule_.order == Schedule::Reverse) std::reverse(order.begin(), order.end());
    ready_.assign(order.begin(), order.end());

    BlockRun* previous = active_run;
    active_run = this;
    struct Restore {
      BlockRun* previous;
      ~Restore() { active_run = previous; }
    } restore{previous};
    while (!ready_.empty()) {
      const int t = pick();
      resume(t);
      if (pending_fault_) throw *pending_fault_;
      after_yield(t);
    }
    if (live_ > 0) fault(cudaErrorLaunchFailure, deadlock_report());
  }

  // --- Called from inside a fiber ---------------------------------------------------------------

  static BlockRun& active(const char* function) {
    if (BlockRun* run = running()) return *run;
    throw std::logic_error(std::string(function) + " called outside an emulated kernel");
  }

  void block_barrier(const CallSite& site) {
    EmuThread& t = threads_[current_];
    t.state = State::AtBlockBarrier;
    t.site = site;
    t.fiber->suspend();
  }

  uint64_t warp_collective(WarpRequest& request, const CallSite& site) {
    EmuThread& t = threads_[current_];
    const int lane = t.linear % warpSize;
    const int lanes = warp_lanes(t.linear / warpSize);
    const unsigned existing = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
    if ((request.mask & (1u << lane)) == 0) {
      record_fault_in_fiber(site, "the calling lane " + std::to_string(lane) + " is not in its mask 0x" +
                                      hex(request.mask));
      abandon_fiber();
    }
    if ((request.mask & ~existing) != 0) {
      record_fault_in_fiber(site, "mask 0x" + hex(request.mask) + " names lanes that do not exist: this warp has " +
                                      std::to_string(lanes) + " threads");
      abandon_fiber();
    }
    const bool shuffle = request.op >= WarpOp::ShuffleIdx && request.op <= WarpOp::ShuffleXor;
    if (shuffle && (request.width < 1 || request.width > warpSize || (request.width & (request.width - 1)) != 0)) {
      record_fault_in_fiber(site, "width " + std::to_string(request.width) + " is not a power of two up to 32");
      abandon_fiber();
    }
    t.state = State::AtWarpOp;
    t.site = site;
    t.request = &request;
    t.fiber->suspend();
    return request.result;
  }

  void* dynamic_shared() const { return shared_.get(); }

 private:
  static void thread_main(void* raw) {
    auto* t = static_cast<EmuThread*>(raw);
    active_run->body_.run_thread();
    t->state = State::Exited;
  }

  int warp_lanes(int warp) const {
    return std::min(warpSize, static_cast<int>(threads_.size()) - warp * warpSize);
  }

  static std::string hex(unsigned v) {
    std::ostringstream out;
    out << std::hex << v;
    return out.str();
  }

  int pick() {
    if (schedule_.order == Schedule::Random) {
      std::uniform_int_distribution<size_t> any(0, ready_.size() - 1);
      const size_t i = any(rng_);
      std::swap(ready_[i], ready_.back());
      const int t = ready_.back();
      ready_.pop_back();
      return t;
    }
    const int t = ready_.front();
    ready_.pop_front();
    return t;
  }

  void resume(int i) {
    EmuThread& t = threads_[i];
    threadIdx = t.idx;
    blockIdx = block_;
    blockDim = config_.block;
    gridDim = config_.grid;
    current_ = i;
    t.fiber->resume();
    current_ = -1;
  }

  void after_yield(int i) {
    EmuThread& t = threads_[i];
    switch (t.state) {
      case State::Exited:
        --live_;
        ++exited_;
        check_warp(t.linear / warpSize);
        check_block_barrier(i);
        break;
      case State::AtBlockBarrier:
        ++at_barrier_;
        check_warp(t.linear / warpSize);  // its warp may be waiting for it in a collective
        check_block_barrier(i);
        break;
      case State::AtWarpOp:
        check_warp(t.linear / warpSize);
        break;
      case State::Ready:
        break;
    }
  }

  // Releases the barrier once every live thread waits at it; faults when it can never release.
  void check_block_barrier(int last) {
    if (at_barrier_ == 0 || at_barrier_ < live_) return;
    const EmuThread* first_waiting = nullptr;
    const EmuThread* first_exited = nullptr;
    for (const auto& t : threads_) {
      if (t.state == State::AtBlockBarrier && first_waiting == nullptr) first_waiting = &t;
      if (t.state == State::Exited && first_exited == nullptr) first_exited = &t;
    }
    if (exited_ > 0) {
      fault(cudaErrorLaunchFailure,
            call_text(first_waiting->site) + " reached by " + std::to_string(at_barrier_) + " of " +
                std::to_string(threads_.size()) + " threads of the block; thread " + idx_str(first_exited->idx) +
                (exited_ > 1 ? " and " + std::to_string(exited_ - 1) + " others" : "") +
                " returned without reaching it (a barrier in divergent code)");
    }
    for (const auto& t : threads_) {
      if (t.site.line != first_waiting->site.line || std::strcmp(t.site.file, first_waiting->site.file) != 0) {
        fault(cudaErrorLaunchFailure, "threads of one block wait at different barriers: thread " +
                                          idx_str(first_waiting->idx) + " at " + call_text(first_waiting->site) +
                                          ", thread " + idx_str(t.idx) + " at " + call_text(t.site) +
                                          " (a barrier in divergent code)");
      }
    }
    at_barrier_ = 0;
    std::vector<int> order(threads_.size());
    std::iota(order.begin(), order.end(), 0);
    switch (schedule_.order) {
      case Schedule::Reverse: std::reverse(order.begin(), order.end()); break;
      case Schedule::RunAhead: {
        // The warp that completed the barrier goes first and runs on to its next barrier.
        const int warp = threads_[last].linear / warpSize;
        std::rotate(order.begin(), order.begin() + warp * warpSize, order.end());
        break;
      }
      default: break;
    }
    for (int i : order) {
      threads_[i].state = State::Ready;
      ready_.push_back(i);
    }
  }

  // Completes the warp collectives of `warp` whose every named lane has arrived; faults when one
  // never can. Runs at every arrival, so the messages are built only on the fault paths.
  void check_warp(int warp) {
    const int base = warp * warpSize, lanes = warp_lanes(warp);
    // Lanes waiting in the same collective with the same mask get the same answer, and the scan
    // below is quadratic in the lanes: a lane that repeats the previous lane's request is skipped.
    const WarpRequest* still_waiting = nullptr;
    for (int l = 0; l < lanes; ++l) {
      const EmuThread& w = threads_[base + l];
      if (w.state != State::AtWarpOp) continue;
      const unsigned mask = w.request->mask;
      if (still_waiting && still_waiting->mask == mask && still_waiting->op == w.request->op) continue;
      bool all_arrived = true;
      for (int m = 0; m < lanes && all_arrived; ++m) {
        if ((mask & (1u << m)) == 0) continue;
        const EmuThread& o = threads_[base + m];
        switch (o.state) {
          case State::Ready: all_arrived = false; break;
          case State::Exited:
            fault(cudaErrorLaunchFailure, waiting_text(w, l) + " waits for lane " + std::to_string(m) +
                                              ", which returned without reaching it (a deadlock on a GPU)");
          case State::AtBlockBarrier:
            fault(cudaErrorLaunchFailure, waiting_text(w, l) + " waits for lane " + std::to_string(m) +
                                              ", which waits at " + call_text(o.site) + " (a deadlock)");
          case State::AtWarpOp:
            if (o.request->mask != mask || o.request->op != w.request->op) {
              fault(cudaErrorLaunchFailure, waiting_text(w, l) + " meets lane " + std::to_string(m) + " in " +
                                                call_text(o.site) + " with mask 0x" + hex(o.request->mask) +
                                                " (lanes of one collective must call the same one with one mask)");
            }
            break;
        }
      }
      if (all_arrived) {
        complete_warp_op(base, lanes, mask);
        still_waiting = nullptr;  // lanes changed state
      } else {
        still_waiting = w.request;
      }
    }
  }

  std::string waiting_text(const EmuThread& t, int lane) const {
    return call_text(t.site) + " with mask 0x" + hex(t.request->mask) + " in lane " + std::to_string(lane);
  }

  void complete_warp_op(int base, int lanes, unsigned mask) {
    const WarpRequest& first = *threads_[base + std::countr_zero(mask)].request;
    uint64_t votes = 0;
    for (int m = 0; m < lanes; ++m) {
      if ((mask & (1u << m)) && threads_[base + m].request->operand != 0) votes |= 1ull << m;
    }
    for (int m = 0; m < lanes; ++m) {
      if ((mask & (1u << m)) == 0) continue;
      WarpRequest& r = *threads_[base + m].request;
      switch (first.op) {
        case WarpOp::Sync: r.result = 0; break;
        case WarpOp::Ballot: r.result = votes; break;
        case WarpOp::Any: r.result = votes != 0; break;
        case WarpOp::All: r.result = votes == mask; break;
        default: r.result = shuffle_result(base, m, r, mask); break;
      }
    }
    std::vector<int> released;
    for (int m = 0; m < lanes; ++m) {
      if ((mask & (1u << m)) == 0) continue;
      threads_[base + m].state = State::Ready;
      threads_[base + m].request = nullptr;
      released.push_back(base + m);
    }
    switch (schedule_.order) {
      case Schedule::RunAhead:  // the warp goes on at once
        ready_.insert(ready_.begin(), released.begin(), released.end());
        break;
      case Schedule::Reverse: ready_.insert(ready_.end(), released.rbegin(), released.rend()); break;
      default: ready_.insert(ready_.end(), released.begin(), released.end()); break;
    }
  }

  // CUDA's rule: a lane reads its own value when its source lies outside its `width` segment
  // (up: below the segment, down and xor: past it); idx wraps within the segment.
  uint64_t shuffle_result(int base, int lane, const WarpRequest& r, unsigned mask) {
    const int segment = lane / r.width * r.width;
    int source = lane;
    switch (r.op) {
      case WarpOp::ShuffleIdx: source = segment + ((r.operand % r.width) + r.width) % r.width; break;
      case WarpOp::ShuffleUp: source = lane - r.operand >= segment ? lane - r.operand : lane; break;
      case WarpOp::ShuffleDown: source = lane + r.operand < segment + r.width ? lane + r.operand : lane; break;
      case WarpOp::ShuffleXor: {
        const int other = lane ^ r.operand;
        source = other < segment + r.width ? other : lane;
        break;
      }
      default: break;
    }
    if ((mask & (1u << source)) == 0) {
      fault(cudaErrorLaunchFailure, call_text(threads_[base + lane].site) + ": lane " + std::to_string(lane) +
                                        " reads lane " + std::to_string(source) + ", which is not in mask 0x" +
                                        hex(mask) + " (an undefined value on a GPU)");
    }
    return threads_[base + source].request->value;
  }

  std::string deadlock_report() const {
    std::ostringstream out;
    out << "no thread of the block can run (a deadlock):";
    int shown = 0;
    for (const auto& t : threads_) {
      if (t.state == State::Exited || t.state == State::Ready) continue;
      if (shown++ == 4) {
        out << " ...";
        break;
      }
      out << " thread " << idx_str(t.idx) << " waits at "
          << call_text(t.site) << ';';
    }
    out << ' ' << exited_ << " returned";
    return out.str();
  }

  static std::string call_text(const CallSite& s) {
    return std::string(s.function) + " at " + short_site(s.file, s.line);
  }

  [[noreturn]] void fault(cudaError_t code, const std::string& what) const {
    throw KernelFault(code, "kernel " + std::string(config_.kernel) + " (launched at " +
                                short_site(config_.file, static_cast<unsigned>(config_.line)) + "), block " +
                                idx_str(block_) + ", schedule " + to_string(schedule_) + ": " + what);
  }


 public:
  // From inside a fiber: record the fault for the host side to throw. The caller then calls
  // abandon_fiber() in a statement of its own, so that no string of the message is still alive on
  // the fiber's stack, where it would never be destroyed (LeakSanitizer would say so).
  void record_fault_in_fiber(cudaError_t code, const std::string& what) {
    try {
      fault(code, what);
    } catch (const KernelFault& f) {
      pending_fault_ = std::make_unique<KernelFault>(f);
    }
  }
  void record_fault_in_fiber(const CallSite& site, const std::string& what) {
    record_fault_in_fiber(cudaErrorLaunchFailure,
                          call_text(site) + " in thread " + idx_str(threads_[current_].idx) + ": " + what);
  }
  // Gives the host stack back for good: the runner throws the recorded fault.
  [[noreturn]] void abandon_fiber() {
    threads_[current_].fiber->suspend();
    std::abort();  // an abandoned fiber is never resumed
  }

  // The emulated thread running now, or null outside a kernel.
  static BlockRun* running() { return active_run != nullptr && active_run->current_ >= 0 ? active_run : nullptr; }
  uint3 running_thread() const { return threads_[current_].idx; }

 private:
  const LaunchConfig& config_;
  KernelBody& body_;
  ScheduleSetting schedule_;
  std::mt19937_64 rng_;
  std::vector<EmuThread> threads_;
  std::unique_ptr<unsigned char[]> shared_;
  std::deque<int> ready_;
  uint3 block_{};
  int current_ = -1;
  int live_ = 0, exited_ = 0, at_barrier_ = 0;
  std::unique_ptr<KernelFault> pending_fault_;
};

// Block order: ascending, descending, or a seeded permutation (start + i * stride) mod total with
// a stride coprime to the total.
struct BlockOrder {
  uint64_t total, start = 0, stride = 1;
  bool reverse = false;
  BlockOrder(uint64_t n, const ScheduleSetting& s) : total(n) {
    if (s.order == Schedule::Reverse) reverse = true;
    if (s.order == Schedule::Random && n > 1) {
      std::mt19937_64 rng(s.seed ^ 0x9e3779b97f4a7c15ull);
      start = rng() % n;
      do stride = rng() % n; while (stride == 0 || std::gcd(stride, n) != 1);
    }
  }
  uint64_t operator[](uint64_t i) const { return reverse ? total - 1 - i : (start + i * stride) % total; }
};

}  // namespace

void block_barrier(const CallSite& site) { BlockRun::active("__syncthreads").block_barrier(site); }

uint64_t warp_collective(WarpRequest request, const CallSite& site) {
  return BlockRun::active(site.function).warp_collective(request, site);
}

namespace {

std::string misaligned_text(const void* address, size_t alignment, const char* type, const char* access,
                            const char* file, unsigned line) {
  std::ostringstream what;
  what << "misaligned address: a " << type << ' ' << access << ' ' << address << ", which needs " << alignment
       << "-byte alignment";
  if (file != nullptr) what << ", at " << short_site(file, line);
  return what.str();
}

}  // namespace

void report_misaligned_vector(const void* address, size_t alignment, const char* type, const char* access,
                              const char* file, unsigned line) {
  if (BlockRun* run = BlockRun::running()) {
    run->record_fault_in_fiber(cudaErrorMisalignedAddress,
                               misaligned_text(address, alignment, type, access, file, line) + " in thread " +
                                   idx_str(run->running_thread()));
    run->abandon_fiber();
  }
  std::fprintf(stderr, "ember CUDA emulator, in host code: %s\n",
               misaligned_text(address, alignment, type, access, file, line).c_str());
  std::abort();
}

void* dynamic_shared_memory() { return BlockRun::active("dynamic shared memory").dynamic_shared(); }

void run_grid(const LaunchConfig& config, KernelBody& body, const ScheduleSetting& schedule) {
  BlockRun run(config, body, schedule);
  const dim3 g = config.grid;
  const uint64_t total = static_cast<uint64_t>(g.x) * g.y * g.z;
  const BlockOrder order(total, schedule);
  for (uint64_t i = 0; i < total; ++i) {
    const uint64_t b = order[i];
    run.run_block(uint3{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                        static_cast<unsigned>(b / (static_cast<uint64_t>(g.x) * g.y))});
  }
}

std::string short_site(const char* file, unsigned line) {
  std::string path = file;
  const size_t at = path.rfind("kernels/");
  if (at != std::string::npos) path = path.substr(at);
  return path + ":" + std::to_string(line);
}

}  // namespace ember::emu
