// ember's emulated NCCL: ncclAllReduce and ncclBroadcast. Each call checks its arguments on the
// calling thread, as NCCL does before it enqueues anything (the communicator, the type and
// operation, the root, and that both buffers and the stream belong to the communicator's device),
// then queues the collective on the stream; the stream's worker runs it through the transport,
// waiting there for the peer ranks' matching collective (nccl_transport.h).
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include <nccl.h>

#include "ember/kernels/cuda/emulator/device/device.h"
#include "ember/kernels/cuda/emulator/device/nccl_comm.h"
#include "ember/kernels/cuda/emulator/device/nccl_errors.h"

using namespace ember::emu::nccl;
namespace device = ember::emu::device;

namespace {

std::string hex(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

// What the transport moves for `count` elements of `type`: the scalar it reduces in, and how
// many of them. Types the transport cannot reduce (16- and 8-bit floats) travel as bytes when
// nothing is reduced (a broadcast) and are refused for reductions.
struct Elements {
  Scalar scalar;
  size_t count;
};

Elements elements_of(ncclDataType_t type, size_t count, bool reduced) {
  switch (type) {
    case ncclInt8: return {Scalar::int8, count};
    case ncclUint8: return {Scalar::uint8, count};
    case ncclInt32: return {Scalar::int32, count};
    case ncclUint32: return {Scalar::uint32, count};
    case ncclInt64: return {Scalar::int64, count};
    case ncclUint64: return {Scalar::uint64, count};
    case ncclFloat32: return {Scalar::float32, count};
    case ncclFloat64: return {Scalar::float64, count};
    case ncclFloat16:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: {
      if (reduced) {
        throw ApiError(ncclInvalidArgument, "datatype " + std::to_string(static_cast<int>(type)) +
                                                " (a 16- or 8-bit float) cannot be reduced on the emulated device; "
                                                "it supports int8 to uint64, float32 and float64");
      }
      const size_t bytes = type == ncclFloat16 || type == ncclBfloat16 ? 2 : 1;
      if (count > SIZE_MAX / bytes) break;
      return {Scalar::uint8, count * bytes};
    }
    case ncclNumTypes: break;
  }
  throw ApiError(ncclInvalidArgument, "datatype " + std::to_string(static_cast<int>(type)) +
                                          " is not an ncclDataType_t (0 to " + std::to_string(ncclNumTypes - 1) + ")");
}

Reduction reduction_of(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return Reduction::sum;
    case ncclProd: return Reduction::prod;
    case ncclMax: return Reduction::max;
    case ncclMin: return Reduction::min;
    case ncclAvg: return Reduction::avg;
    case ncclNumOps: break;
  }
  throw ApiError(ncclInvalidArgument, "op " + std::to_string(static_cast<int>(op)) +
                                          " is not a built-in ncclRedOp_t (ncclSum .. ncclAvg, 0 to 4)");
}

size_t bytes_of(const Elements& e) {
  const size_t size = scalar_bytes(e.scalar);
  if (e.count > SIZE_MAX / size) {
    throw ApiError(ncclInvalidArgument, "count " + std::to_string(e.count) + " overflows the address space");
  }
  return e.count * size;
}

// `name` ("recvbuff") must be `bytes` of device memory on the communicator's device.
void check_buffer(const char* name, const void* buffer, size_t bytes, const Communicator& comm) {
  if (buffer == nullptr) throw ApiError(ncclInvalidArgument, std::string(name) + " is null");
  const int whole = device::device_of(buffer, bytes);
  if (whole == comm.device()) return;
  const std::string where = std::string(name) + " [" + hex(buffer) + ", +" + std::to_string(bytes) + " bytes)";
  const std::string expected = "the communicator (" + comm.describe() + ") needs memory of cuda:" +
                               std::to_string(comm.device());
  if (whole >= 0) {
    throw ApiError(ncclInvalidArgument, where + " is memory of cuda:" + std::to_string(whole) + ", but " + expected);
  }
  const int start = device::device_of(buffer, 1);
  if (start >= 0) {
    throw ApiError(ncclInvalidArgument, where + " runs past the end of its allocation on cuda:" +
                                            std::to_string(start) + " (" + expected + ")");
  }
  throw ApiError(ncclInvalidArgument, where + " is not in any live cudaMalloc allocation (host memory, or "
                                              "freed?), but " + expected);
}

// NCCL runs on the communicator's device whatever device is current; so does the legacy default
// stream (nullptr) it is given. This makes that device current for the check and the enqueue.
class OnDevice {
 public:
  explicit OnDevice(int d) : saved_(device::current_device()) {
    if (saved_ != d) cudaSetDevice(d);
  }
  ~OnDevice() {
    if (device::current_device() != saved_) cudaSetDevice(saved_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int saved_;
};

// Queues `collective` on `stream`. On the worker, a transport failure is recorded as the
// communicator's asynchronous error and becomes the device's sticky error (naming the rank and
// what it waited for), so that the next CUDA call on that device reports it.
void enqueue(const char* call, const std::shared_ptr<Communicator>& comm, cudaStream_t stream,
             std::function<void(Endpoint&)> collective) {
  OnDevice on(comm->device());
  const int stream_device = device::stream_device(stream);
  if (stream_device < 0) {
    throw ApiError(ncclInvalidArgument, "stream " + hex(stream) + " does not exist (destroyed?)");
  }
  if (stream_device != comm->device()) {
    throw ApiError(ncclInvalidArgument, "stream " + hex(stream) + " belongs to cuda:" + std::to_string(stream_device) +
                                            ", but the communicator (" + comm->describe() + ") is on cuda:" +
                                            std::to_string(comm->device()));
  }
  const cudaError_t queued = device::enqueue(stream, call, [call, comm, collective = std::move(collective)] {
    try {
      comm->run(collective);
    } catch (const TransportError& e) {
      const std::string details = comm->describe() + ": " + e.what();
      comm->record_async_error(result_for(e.kind), std::string(call) + ": " + details);
      report(call, result_for(e.kind), details);
      throw device::DeviceError(cudaErrorLaunchFailure, details);
    }
  });
  if (queued != cudaSuccess) {
    throw ApiError(ncclUnhandledCudaError, std::string("queueing on stream ") + hex(stream) + " failed: " +
                                               cudaGetErrorString(queued));
  }
}

// An earlier collective of `comm` failed on its stream: every later call reports it.
void check_no_async_error(const Communicator& comm) {
  std::string details;
  if (const ncclResult_t earlier = comm.async_error(&details); earlier != ncclSuccess) {
    throw ApiError(earlier, "an earlier collective failed: " + details);
  }
}

}  // namespace

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return api_call("ncclAllReduce", [&] {
    const auto state = live_communicator(comm);
    const Elements elements = elements_of(datatype, count, /*reduced=*/true);
    const Reduction reduction = reduction_of(op);
    const size_t bytes = bytes_of(elements);
    check_no_async_error(*state);
    if (count == 0) return;  // as NCCL: nothing to do, nothing queued
    check_buffer("sendbuff", sendbuff, bytes, *state);
    check_buffer("recvbuff", recvbuff, bytes, *state);
    enqueue("ncclAllReduce", state, stream, [=](Endpoint& endpoint) {
      endpoint.all_reduce(sendbuff, recvbuff, elements.count, elements.scalar, reduction);
    });
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return api_call("ncclBroadcast", [&] {
    const auto state = live_communicator(comm);
    const Elements elements = elements_of(datatype, count, /*reduced=*/false);
    if (root < 0 || root >= state->nranks()) {
      throw ApiError(ncclInvalidArgument, "root " + std::to_string(root) + " is out of range for " +
                                              std::to_string(state->nranks()) + " ranks");
    }
    const size_t bytes = bytes_of(elements);
    check_no_async_error(*state);
    if (count == 0) return;
    if (state->rank() == root) check_buffer("sendbuff", sendbuff, bytes, *state);  // read on the root only
    check_buffer("recvbuff", recvbuff, bytes, *state);
    enqueue("ncclBroadcast", state, stream, [=](Endpoint& endpoint) {
      endpoint.broadcast(sendbuff, recvbuff, elements.count, elements.scalar, root);
    });
  });
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
