// The current stream of each device, a guard that switches the current device, events, and the
// allocator's hooks for CUDA graph capture. Declared in every build without the CUDA headers
// (cudaStream_t is kernels::Stream, cudaEvent_t is CUevent_st*); a build without CUDA has no
// device, and these throw there (core/cuda/runtime_stub.cpp).
// defines: ember::cuda::current_stream, set_current_stream, DeviceGuard, StreamGuard, Event
#pragma once

#include "ember/kernels/stream.h"

struct CUevent_st;

namespace ember::cuda {

using kernels::Stream;
using EventHandle = CUevent_st*;  // cudaEvent_t

// The stream ember's kernels and copies on `device` are queued on. Starts as the legacy default
// stream (0), which orders all work on the device without extra synchronisation.
Stream current_stream(int device);
void set_current_stream(int device, Stream stream);

// Makes `device` current for its scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Makes `stream` the current stream of `device` for its scope.
class StreamGuard {
 public:
  StreamGuard(int device, Stream stream) : device_(device), previous_(current_stream(device)) {
    set_current_stream(device, stream);
  }
  ~StreamGuard() { set_current_stream(device_, previous_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  Stream previous_;
};

// A CUDA event on one device: orders one stream after work queued on another without blocking
// the host (record on the producer, wait on the consumer), and times work between two events.
class Event {
 public:
  explicit Event(int device, bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(Stream stream);
  void wait(Stream stream) const;  // later work on `stream` waits for the recorded point
  void synchronize() const;              // the host waits
  bool query() const;                    // true once the recorded work has finished
  float elapsed_ms(const Event& later) const;  // both created with timing = true
  EventHandle get() const { return event_; }

 private:
  int device_;
  EventHandle event_ = nullptr;
};

namespace detail {

// CUDA graph capture support in the caching allocator (Note [Graphs and the allocator]).
// While a capture on `stream` runs, blocks freed that belong to other streams are held back
// instead of reused, because replays of the graph may still touch them.
void begin_capture(int device, Stream stream);
void end_capture(int device, Stream stream);
// After the graph is destroyed: hands the held-back blocks and `stream`'s cached blocks back to
// the device's default pool.
void release_capture(int device, Stream stream);

}  // namespace detail
}  // namespace ember::cuda
