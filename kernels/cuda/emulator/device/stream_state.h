// The emulated device's queue state, shared by streams.cpp, events.cpp and graphs.cpp: the
// streams (CUstream_st), captures in progress, and the one lock and condition variable that
// order them. Private to kernels/cuda/emulator/device/.
// defines: CUstream_st, CUevent_st, CUgraph_st, CUgraphExec_st,
//          ember::emu::device::{Completion, Capture, QueueState, queues, resolve,
//          this_thread_device, this_thread_capture_mode}
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "ember/kernels/cuda/emulator/device/streams.h"

namespace ember::emu::device {

using Clock = std::chrono::steady_clock;

// The point an event recorded: reached once the work queued before it has run.
struct Completion {
  bool done = false;
  Clock::time_point at;
};

// A graph capture in progress (cudaStreamBeginCapture .. cudaStreamEndCapture). Work issued on
// its streams is appended to `nodes` in issue order, which is a valid order to replay it in: a
// node can only depend on work issued before it.
struct Capture {
  std::vector<Work> nodes;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;  // the thread that began it
  CUstream_st* origin = nullptr;
  std::vector<CUstream_st*> joined;  // streams pulled in by waiting on an event of the capture
  cudaError_t invalidated = cudaSuccess;
  std::string why;  // what invalidated it
};

}  // namespace ember::emu::device

struct CUstream_st {
  int device = 0;
  bool legacy_default = false;
  bool blocking = true;  // orders itself with the legacy default stream (cudaStreamDefault)
  uint64_t serial = 0;   // for the jitter's random stream
  std::deque<std::pair<ember::emu::device::Work, std::vector<std::pair<std::shared_ptr<CUstream_st>, uint64_t>>>> queue;
  uint64_t enqueued = 0, completed = 0;
  bool stopping = false;
  std::shared_ptr<ember::emu::device::Capture> capture;
  std::thread worker;
};

struct CUevent_st {
  int device = 0;
  bool timing = true;
  std::shared_ptr<ember::emu::device::Completion> last;  // the latest record; null before one
  std::shared_ptr<ember::emu::device::Capture> captured;  // recorded into this capture
};

struct CUgraph_st {
  std::vector<ember::emu::device::Work> nodes;
};

struct CUgraphExec_st {
  std::vector<ember::emu::device::Work> nodes;
};

namespace ember::emu::device {

struct QueueState {
  std::mutex mutex;  // guards everything below and every stream's and event's fields
  std::condition_variable changed;  // any work completed, or queued
  std::unordered_map<CUstream_st*, std::shared_ptr<CUstream_st>> streams;  // live ones, defaults too
  std::vector<std::shared_ptr<CUstream_st>> defaults;  // per device, made on first use
  std::unordered_map<CUevent_st*, std::unique_ptr<CUevent_st>> events;
  std::vector<std::shared_ptr<Capture>> captures;  // in progress
  std::vector<std::pair<cudaError_t, std::string>> faults;  // sticky, per device
  uint64_t next_serial = 0;
};

QueueState& queues();

// The stream a handle names (nullptr: the current device's legacy default stream), or null when
// it names none. Caller holds queues().mutex.
std::shared_ptr<CUstream_st> resolve(cudaStream_t stream);

// cudaSetDevice's device for the calling thread.
int& this_thread_device();
// cudaThreadExchangeStreamCaptureMode's mode for the calling thread.
cudaStreamCaptureMode& this_thread_capture_mode();

}  // namespace ember::emu::device
