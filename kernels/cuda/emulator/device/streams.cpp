// The emulated GPUs' streams (streams.h): each stream is a queue of work run in order by its own
// worker thread, so the host races ahead of the device as it does on a GPU, and a result read
// before its stream is synchronised is not there yet. The legacy default stream (0) of each
// device orders itself with the device's blocking streams, as CUDA's does. EMBER_EMULATED_JITTER
// (MAX_MICROSECONDS[:SEED]) sleeps a random time before each piece of work, which makes a
// missing synchronisation show up as a wrong result rather than hide behind a fast worker.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "ember/kernels/cuda/emulator/block_runner.h"
#include "ember/kernels/cuda/emulator/device/device.h"
#include "ember/kernels/cuda/emulator/device/memory.h"
#include "ember/kernels/cuda/emulator/device/stream_state.h"
#include "ember/kernels/cuda/emulator/runtime.h"

namespace ember::emu::device {

namespace {

struct Jitter {
  uint64_t max_microseconds = 0;
  uint64_t seed = 1;
};

Jitter parse_jitter(const char* text) {
  Jitter jitter;
  if (text == nullptr) return jitter;
  std::string_view v(text);
  const char* end = v.data() + v.size();
  auto parsed = std::from_chars(v.data(), end, jitter.max_microseconds);
  if (parsed.ec == std::errc() && parsed.ptr != end && *parsed.ptr == ':') {
    parsed = std::from_chars(parsed.ptr + 1, end, jitter.seed);
  }
  if (parsed.ec != std::errc() || parsed.ptr != end || jitter.max_microseconds > 1000000) {
    std::fprintf(stderr, "ember emulated CUDA: EMBER_EMULATED_JITTER must be MAX_MICROSECONDS (0..1000000) "
                 "or MAX_MICROSECONDS:SEED, got \"%s\"\n", text);
    std::abort();
  }
  return jitter;
}

const Jitter& jitter() {
  static const Jitter setting = parse_jitter(std::getenv("EMBER_EMULATED_JITTER"));
  return setting;
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void record_fault(int device, cudaError_t code, const std::string& details) {
  auto& fault = queues().faults[static_cast<size_t>(device)];
  if (fault.first == cudaSuccess) fault = {code, details};
}

// Runs one piece of work; a fault becomes the device's sticky error. Caller does not hold the lock.
void run(CUstream_st& stream, const Work& work) {
  if (work.device_work) {
    std::lock_guard lock(queues().mutex);
    if (queues().faults[static_cast<size_t>(stream.device)].first != cudaSuccess) return;
  }
  try {
    work.run();
  } catch (const KernelFault& fault) {
    std::lock_guard lock(queues().mutex);
    record_fault(stream.device, fault.code, fault.what());
  } catch (const DeviceError& error) {
    std::lock_guard lock(queues().mutex);
    record_fault(stream.device, error.code, work.what + ": " + error.what());
  } catch (const std::exception& error) {
    std::lock_guard lock(queues().mutex);
    record_fault(stream.device, cudaErrorLaunchFailure, work.what + ": " + error.what());
  }
}

// The worker of one stream. It holds DeviceAccess while its queue has work, and gives it up before
// it marks the last piece complete, so that once a synchronisation returns no access remains.
void work_loop(CUstream_st* stream) {
  QueueState& q = queues();
  uint64_t random_state = jitter().seed * 0x2545f4914f6cdd1dull + stream->serial;
  std::optional<DeviceAccess> access;
  std::unique_lock lock(q.mutex);
  for (;;) {
    q.changed.wait(lock, [&] { return stream->stopping || !stream->queue.empty(); });
    if (stream->queue.empty()) return;
    Work work = std::move(stream->queue.front().first);
    const auto after = std::move(stream->queue.front().second);
    stream->queue.pop_front();
    q.changed.wait(lock, [&] {
      for (const auto& [other, position] : after) {
        if (other->completed < position) return false;
      }
      return true;
    });
    lock.unlock();
    if (uint64_t max = jitter().max_microseconds; max > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(splitmix64(random_state) % (max + 1)));
    }
    if (!access) access.emplace();
    run(*stream, work);
    lock.lock();
    if (stream->queue.empty()) {
      lock.unlock();
      access.reset();
      lock.lock();
    }
    ++stream->completed;
    q.changed.notify_all();
  }
}

std::shared_ptr<CUstream_st> make_stream(int device, bool legacy_default, bool blocking) {
  auto stream = std::make_shared<CUstream_st>();
  stream->device = device;
  stream->legacy_default = legacy_default;
  stream->blocking = blocking;
  stream->serial = queues().next_serial++;
  stream->worker = std::thread(work_loop, stream.get());
  return stream;
}

// Blocks until every piece of work queued on `stream` so far has run. Caller holds `lock`.
void drain(std::unique_lock<std::mutex>& lock, CUstream_st& stream) {
  const uint64_t target = stream.enqueued;
  queues().changed.wait(lock, [&] { return stream.completed >= target; });
}

void invalidate(Capture& capture, cudaError_t code, const std::string& why) {
  if (capture.invalidated != cudaSuccess) return;
  capture.invalidated = code;
  capture.why = why;
}

}  // namespace

QueueState& queues() {
  static auto* state = [] {
    auto* s = new QueueState();  // never destroyed: workers run until the process ends
    s->faults.resize(static_cast<size_t>(device_count()), {cudaSuccess, ""});
    return s;
  }();
  return *state;
}

int& this_thread_device() {
  thread_local int device = 0;
  return device;
}

int current_device() { return this_thread_device(); }

cudaStreamCaptureMode& this_thread_capture_mode() {
  thread_local cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  return mode;
}

std::shared_ptr<CUstream_st> resolve(cudaStream_t stream) {
  QueueState& q = queues();
  if (stream == nullptr) {
    const int device = this_thread_device();
    if (q.defaults.empty()) q.defaults.resize(static_cast<size_t>(device_count()));
    auto& slot = q.defaults[static_cast<size_t>(device)];
    if (!slot) {
      slot = make_stream(device, /*legacy_default=*/true, /*blocking=*/true);
      q.streams[slot.get()] = slot;
    }
    return slot;
  }
  auto it = q.streams.find(stream);
  return it == q.streams.end() ? nullptr : it->second;
}

int stream_device(cudaStream_t stream) {
  std::lock_guard lock(queues().mutex);
  auto s = resolve(stream);
  return s ? s->device : -1;
}

cudaError_t fail(cudaError_t code, const std::string& details) {
  if (code != cudaSuccess) record_error(code, details);
  return code;
}

cudaError_t sticky_error(int device) {
  std::pair<cudaError_t, std::string> fault;
  {
    std::lock_guard lock(queues().mutex);
    fault = queues().faults[static_cast<size_t>(device)];
  }
  return fault.first == cudaSuccess ? cudaSuccess
                                    : fail(fault.first, "cuda:" + std::to_string(device) + " faulted earlier: " + fault.second);
}

cudaError_t enqueue_work(cudaStream_t handle, Work work, Ticket* ticket) {
  QueueState& q = queues();
  std::unique_lock lock(q.mutex);
  auto stream = resolve(handle);
  if (!stream) {
    return fail(cudaErrorInvalidResourceHandle, work.what + ": stream " +
                std::to_string(reinterpret_cast<uintptr_t>(handle)) + " does not exist (destroyed?)");
  }
  if (const auto& fault = q.faults[static_cast<size_t>(stream->device)]; fault.first != cudaSuccess) {
    const auto copy = fault;
    lock.unlock();
    return fail(copy.first, "cuda:" + std::to_string(stream->device) + " faulted earlier: " + copy.second);
  }
  if (stream->capture) {
    Capture& capture = *stream->capture;
    if (capture.invalidated != cudaSuccess) {
      return fail(cudaErrorStreamCaptureInvalidated, work.what + ": the capture was invalidated earlier: " + capture.why);
    }
    capture.nodes.push_back(std::move(work));
    if (ticket) *ticket = Ticket{};
    return cudaSuccess;
  }
  // The legacy default stream waits for the device's blocking streams, and they wait for it.
  std::vector<std::pair<std::shared_ptr<CUstream_st>, uint64_t>> after;
  if (stream->legacy_default) {
    for (auto& [raw, other] : q.streams) {
      if (other->device == stream->device && other->blocking && other != stream) after.emplace_back(other, other->enqueued);
    }
  } else if (stream->blocking && !q.defaults.empty() && q.defaults[static_cast<size_t>(stream->device)]) {
    auto& legacy = q.defaults[static_cast<size_t>(stream->device)];
    after.emplace_back(legacy, legacy->enqueued);
  }
  stream->queue.emplace_back(std::move(work), std::move(after));
  ++stream->enqueued;
  if (ticket) *ticket = Ticket{stream, stream->enqueued};
  q.changed.notify_all();
  return cudaSuccess;
}

void wait_for(const Ticket& ticket) {
  if (!ticket.stream) return;
  QueueState& q = queues();
  std::unique_lock lock(q.mutex);
  q.changed.wait(lock, [&] { return ticket.stream->completed >= ticket.position; });
}

cudaError_t enqueue(cudaStream_t stream, const char* what, std::function<void()> work) {
  return enqueue_work(stream, Work{what, std::move(work), true});
}

bool capturing(cudaStream_t handle) {
  std::lock_guard lock(queues().mutex);
  auto stream = resolve(handle);
  return stream && stream->capture;
}

cudaError_t unsafe_during_capture(const char* call) {
  const cudaStreamCaptureMode thread_mode = this_thread_capture_mode();
  if (thread_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  std::string why;
  {
    std::lock_guard lock(queues().mutex);
    for (auto& capture : queues().captures) {
      const bool mine = capture->thread == std::this_thread::get_id() && capture->mode != cudaStreamCaptureModeRelaxed;
      const bool global = thread_mode == cudaStreamCaptureModeGlobal && capture->mode == cudaStreamCaptureModeGlobal;
      if (!mine && !global) continue;
      why = std::string(call) + " is not permitted while a stream is being captured (" +
            (mine ? "this thread's capture" : "a global-mode capture on another thread") + ")";
      invalidate(*capture, cudaErrorStreamCaptureUnsupported, why);
    }
  }
  return why.empty() ? cudaSuccess : fail(cudaErrorStreamCaptureUnsupported, why);
}

void synchronize_device(int device) {
  std::unique_lock lock(queues().mutex);
  std::vector<std::shared_ptr<CUstream_st>> on_device;
  for (auto& [raw, stream] : queues().streams) {
    if (stream->device == device) on_device.push_back(stream);
  }
  for (auto& stream : on_device) drain(lock, *stream);
}

cudaError_t fail_if_capturing(cudaStream_t handle, const char* call, const char* why) {
  std::string message;
  {
    std::lock_guard lock(queues().mutex);
    auto stream = resolve(handle);
    if (!stream || !stream->capture) return cudaSuccess;
    message = std::string(call) + " cannot be captured: " + why;
    invalidate(*stream->capture, cudaErrorStreamCaptureUnsupported, message);
  }
  return fail(cudaErrorStreamCaptureUnsupported, message);
}

}  // namespace ember::emu::device

using namespace ember::emu::device;

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) {
    return fail(cudaErrorInvalidValue, "cudaStreamCreateWithFlags: flags must be cudaStreamDefault or cudaStreamNonBlocking");
  }
  std::lock_guard lock(queues().mutex);
  auto created = make_stream(this_thread_device(), false, (flags & cudaStreamNonBlocking) == 0);
  queues().streams[created.get()] = created;
  *stream = created.get();
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  QueueState& q = queues();
  std::shared_ptr<CUstream_st> stream;
  {
    std::unique_lock lock(q.mutex);
    auto it = handle == nullptr ? q.streams.end() : q.streams.find(handle);
    if (it == q.streams.end()) {
      return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: not a stream created by cudaStreamCreate");
    }
    stream = it->second;
    if (stream->capture) {
      return fail(cudaErrorIllegalState, "cudaStreamDestroy: the stream is being captured");
    }
    q.streams.erase(it);
    stream->stopping = true;  // the worker finishes what is queued, then returns
    q.changed.notify_all();
  }
  stream->worker.join();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  std::unique_lock lock(queues().mutex);
  auto stream = resolve(handle);
  if (!stream) return fail(cudaErrorInvalidResourceHandle, "cudaStreamQuery: no such stream");
  if (stream->capture) {
    lock.unlock();
    return fail_if_capturing(handle, "cudaStreamQuery", "it asks whether captured work has run");
  }
  return stream->completed == stream->enqueued ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  QueueState& q = queues();
  int device = 0;
  {
    std::unique_lock lock(q.mutex);
    auto stream = resolve(handle);
    if (!stream) return fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: no such stream");
    if (stream->capture) {
      lock.unlock();
      return fail_if_capturing(handle, "cudaStreamSynchronize", "the host would wait for work that is only recorded");
    }
    drain(lock, *stream);
    device = stream->device;
  }
  return sticky_error(device);
}

cudaError_t cudaDeviceSynchronize() {
  if (cudaError_t status = unsafe_during_capture("cudaDeviceSynchronize"); status != cudaSuccess) return status;
  const int device = this_thread_device();
  synchronize_device(device);
  return sticky_error(device);
}
