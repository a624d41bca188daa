// The emulated GPUs' events: a record queues a marker on its stream that notes the time it ran;
// a wait queues, on the waiting stream, work that blocks its worker until that marker has run.
// During a capture, a record marks the event as the capture's, and a stream that waits on such an
// event joins the capture (how CUDA forks a capture onto a second stream).
#include "ember/kernels/cuda/emulator/device/stream_state.h"

using namespace ember::emu::device;

namespace {

CUevent_st* find_event(cudaEvent_t event) {
  auto& events = queues().events;
  auto it = events.find(event);
  return it == events.end() ? nullptr : it->second.get();
}

}  // namespace

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  if (event == nullptr || (flags & ~(cudaEventBlockingSync | cudaEventDisableTiming)) != 0) {
    return fail(cudaErrorInvalidValue, "cudaEventCreateWithFlags: unknown flags");
  }
  auto created = std::make_unique<CUevent_st>();
  created->device = this_thread_device();
  created->timing = (flags & cudaEventDisableTiming) == 0;
  std::lock_guard lock(queues().mutex);
  *event = created.get();
  queues().events[created.get()] = std::move(created);
  return cudaSuccess;
}

// A recorded point that has not been reached yet stays valid: its marker holds the Completion.
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard lock(queues().mutex);
  if (queues().events.erase(event) == 0) return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy: no such event");
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::shared_ptr<Completion> point;
  {
    std::lock_guard lock(queues().mutex);
    CUevent_st* e = find_event(event);
    if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: no such event");
    auto s = resolve(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: no such stream");
    if (s->device != e->device) {
      return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: the event belongs to cuda:" + std::to_string(e->device) +
                                                      ", the stream to cuda:" + std::to_string(s->device));
    }
    if (s->capture) {
      e->captured = s->capture;
      return cudaSuccess;
    }
    e->captured = nullptr;
    point = std::make_shared<Completion>();
    e->last = point;
  }
  return enqueue_work(stream, Work{"cudaEventRecord", [point] {
                                     std::lock_guard lock(queues().mutex);
                                     point->at = Clock::now();
                                     point->done = true;
                                     queues().changed.notify_all();
                                   },
                                   /*device_work=*/false});
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  std::shared_ptr<Completion> point;
  {
    std::lock_guard lock(queues().mutex);
    CUevent_st* e = find_event(event);
    if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: no such event");
    auto s = resolve(stream);
    if (!s) return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: no such stream");
    if (e->captured) {
      if (s->capture == e->captured) return cudaSuccess;  // issue order already orders the nodes
      if (s->capture) {
        return fail(cudaErrorStreamCaptureIsolation, "cudaStreamWaitEvent: the stream and the event belong to different captures");
      }
      if (e->captured->invalidated == cudaSuccess && e->captured->origin != nullptr) {
        s->capture = e->captured;  // the stream joins the capture
        e->captured->joined.push_back(s.get());
        return cudaSuccess;
      }
      e->captured = nullptr;  // a capture that has ended: the wait is on nothing
    }
    if (s->capture) {
      s->capture->invalidated = cudaErrorStreamCaptureIsolation;
      s->capture->why = "cudaStreamWaitEvent: a captured stream waited on an event recorded outside the capture";
      return fail(cudaErrorStreamCaptureIsolation, s->capture->why);
    }
    point = e->last;
  }
  if (!point) return cudaSuccess;  // never recorded: nothing to wait for
  return enqueue_work(stream, Work{"cudaStreamWaitEvent", [point] {
                                     std::unique_lock lock(queues().mutex);
                                     queues().changed.wait(lock, [&] { return point->done; });
                                   },
                                   /*device_work=*/false});
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard lock(queues().mutex);
  CUevent_st* e = find_event(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: no such event");
  if (e->captured) return fail(cudaErrorCapturedEvent, "cudaEventQuery: the event was recorded in a capture");
  return !e->last || e->last->done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::unique_lock lock(queues().mutex);
  CUevent_st* e = find_event(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: no such event");
  if (e->captured) return fail(cudaErrorCapturedEvent, "cudaEventSynchronize: the event was recorded in a capture");
  auto point = e->last;
  const int device = e->device;
  if (point) queues().changed.wait(lock, [&] { return point->done; });
  lock.unlock();
  return sticky_error(device);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard lock(queues().mutex);
  CUevent_st* a = find_event(start);
  CUevent_st* b = find_event(end);
  if (ms == nullptr || a == nullptr || b == nullptr) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: no such event");
  if (!a->timing || !b->timing) {
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was created with cudaEventDisableTiming");
  }
  if (!a->last || !b->last) return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was never recorded");
  if (!a->last->done || !b->last->done) return cudaErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->last->at - a->last->at).count();
  return cudaSuccess;
}
