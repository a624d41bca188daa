#include "ember/parallel/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <cuda_runtime_api.h>

#include "ember/common/cuda_check.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/parallel/nccl_check.h"

namespace ember::parallel {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclUniqueId), "NcclUniqueId must hold an ncclUniqueId");

struct NcclCommunicator::Rank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // non-blocking: see Note [NCCL streams]
  float* scratch = nullptr;       // one float for barrier()
};

namespace {

ncclDataType_t nccl_type(DType dtype, const char* op) {
  if (dtype == kFloat32) return ncclFloat32;
  if (dtype == kFloat64) return ncclFloat64;
  throw Error(ember::detail::str(op, ": NcclCommunicator expects float32 or float64 tensors, got ", dtype_name(dtype)));
}

void check_tensors(const std::vector<Tensor>& tensors, int device, const char* op) {
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.defined(), op, ": got an undefined tensor");
    EMBER_CHECK(t.device() == Device::cuda(device) && t.is_contiguous(), op, ": NcclCommunicator needs contiguous "
                "tensors on cuda:", device, " for this rank, got one on ", t.device(),
                t.is_contiguous() ? "" : " (non-contiguous)");
    nccl_type(t.dtype(), op);
  }
}

// ncclGroupStart now, ncclGroupEnd at end() or, if an NCCL call in between threw, on unwinding.
class Group {
 public:
  Group() { EMBER_NCCL_CHECK(ncclGroupStart()); }
  void end() {
    ended_ = true;
    EMBER_NCCL_CHECK(ncclGroupEnd());
  }
  ~Group() {
    if (!ended_) ncclGroupEnd();
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  bool ended_ = false;
};

// Makes `waiter` wait for the work queued on `signaller` so far (device already current).
void order_after(cudaStream_t waiter, cudaStream_t signaller) {
  cudaEvent_t event = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  cudaError_t recorded = cudaEventRecord(event, signaller);
  cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(waiter, event, 0) : recorded;
  cudaEventDestroy(event);  // released once the recorded work completes
  EMBER_CUDA_CHECK(waited);
}

// The collective's end, recorded on the NCCL stream; wait() orders the compute stream after it.
class NcclWork final : public Work {
 public:
  NcclWork(std::vector<Tensor> tensors, int device, cudaStream_t nccl_stream)
      : tensors_(std::move(tensors)), device_(device) {
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    EMBER_CUDA_CHECK(cudaEventRecord(done_, nccl_stream));
  }
  ~NcclWork() override {
    if (!waited_) {
      try {
        wait();
      } catch (...) {  // a destructor must not throw; the CUDA error resurfaces at the next call
      }
    }
    if (done_) cudaEventDestroy(done_);
  }
  void wait() override {
    if (waited_) return;
    waited_ = true;
    cuda::DeviceGuard guard(device_);
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(cuda::current_stream(device_), done_, 0));
  }

 private:
  std::vector<Tensor> tensors_;  // kept alive until the compute stream is ordered after NCCL
  int device_;
  cudaEvent_t done_ = nullptr;
  bool waited_ = false;
};

void create_stream_and_scratch(int device, cudaStream_t& stream, float*& scratch) {
  cuda::DeviceGuard guard(device);
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EMBER_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&scratch), sizeof(float)));
  EMBER_CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(float), stream));
}

}  // namespace

NcclCommunicator::NcclCommunicator(const std::vector<Device>& devices) {
  EMBER_CHECK(!devices.empty(), "NcclCommunicator: expected at least one CUDA device, got none");
  std::set<int> seen;
  std::vector<int> list;
  for (const Device& d : devices) {
    EMBER_CHECK(d.is_cuda(), "NcclCommunicator: expected CUDA devices, got ", d);
    EMBER_CHECK(d.index() >= 0 && d.index() < cuda::device_count(), "NcclCommunicator: ", d, " is not available (",
                cuda::device_count(), " CUDA devices found)");
    EMBER_CHECK(seen.insert(d.index()).second, "NcclCommunicator: ", d, " is listed twice");
    list.push_back(d.index());
  }
  world_size_ = static_cast<int>(list.size());
  std::vector<ncclComm_t> comms(list.size(), nullptr);
  EMBER_NCCL_CHECK(ncclCommInitAll(comms.data(), world_size_, list.data()));
  for (int r = 0; r < world_size_; ++r) {
    auto* rank = new Rank{r, list[r], comms[r]};
    ranks_.push_back(rank);
    create_stream_and_scratch(rank->device, rank->stream, rank->scratch);
  }
}

NcclCommunicator::NcclCommunicator(const NcclUniqueId& id, int world_size, int rank, Device device) {
  EMBER_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "NcclCommunicator: rank ", rank,
              " is out of range for world size ", world_size);
  EMBER_CHECK(device.is_cuda() && device.index() < cuda::device_count(), "NcclCommunicator: expected an available "
              "CUDA device, got ", device, " (", cuda::device_count(), " CUDA devices found)");
  world_size_ = world_size;
  ncclUniqueId nccl_id;
  std::memcpy(&nccl_id, id.data(), sizeof(nccl_id));
  auto* local = new Rank{rank, device.index()};
  ranks_.push_back(local);
  cuda::DeviceGuard guard(local->device);
  EMBER_NCCL_CHECK(ncclCommInitRank(&local->comm, world_size, nccl_id, rank));
  create_stream_and_scratch(local->device, local->stream, local->scratch);
}

NcclCommunicator::~NcclCommunicator() {
  for (Rank* rank : ranks_) {
    cuda::DeviceGuard guard(rank->device);
    if (rank->stream) cudaStreamSynchronize(rank->stream);
    if (rank->comm) ncclCommDestroy(rank->comm);
    if (rank->scratch) cudaFree(rank->scratch);
    if (rank->stream) cudaStreamDestroy(rank->stream);
    delete rank;
  }
}

NcclUniqueId NcclCommunicator::new_unique_id() {
  ncclUniqueId nccl_id;
  EMBER_NCCL_CHECK(ncclGetUniqueId(&nccl_id));
  NcclUniqueId id;
  std::memcpy(id.data(), &nccl_id, sizeof(nccl_id));
  return id;
}

std::vector<int> NcclCommunicator::local_ranks() const {
  std::vector<int> out;
  for (const Rank* rank : ranks_) out.push_back(rank->rank);
  return out;
}

NcclCommunicator::Rank& NcclCommunicator::local(int rank, const char* op) const {
  for (Rank* r : ranks_) {
    if (r->rank == rank) return *r;
  }
  throw Error(ember::detail::str(op, ": rank ", rank, " is not driven by this process (world size ", world_size_, ")"));
}

Device NcclCommunicator::device(int rank) const { return Device::cuda(local(rank, "device").device); }

std::unique_ptr<Work> NcclCommunicator::all_reduce_async(int rank, std::vector<Tensor> tensors, ReduceOp op) {
  Rank& r = local(rank, "all_reduce");
  check_tensors(tensors, r.device, "all_reduce");
  cuda::DeviceGuard guard(r.device);
  order_after(r.stream, cuda::current_stream(r.device));
  {
    Group group;
    for (Tensor& t : tensors) {
      EMBER_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.mutable_data_ptr("all_reduce"), static_cast<size_t>(t.numel()),
                                     nccl_type(t.dtype(), "all_reduce"), op == ReduceOp::Average ? ncclAvg : ncclSum,
                                     r.comm, r.stream));
    }
    group.end();
  }
  return std::make_unique<NcclWork>(std::move(tensors), r.device, r.stream);
}

void NcclCommunicator::all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op) {
  all_reduce_async(rank, tensors, op)->wait();
}

void NcclCommunicator::broadcast(int rank, std::vector<Tensor>& tensors, int root) {
  Rank& r = local(rank, "broadcast");
  EMBER_CHECK(root >= 0 && root < world_size_, "broadcast: root ", root, " is out of range for world size ", world_size_);
  check_tensors(tensors, r.device, "broadcast");
  cuda::DeviceGuard guard(r.device);
  order_after(r.stream, cuda::current_stream(r.device));
  {
    Group group;
    for (Tensor& t : tensors) {
      EMBER_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.mutable_data_ptr("broadcast"), static_cast<size_t>(t.numel()),
                                     nccl_type(t.dtype(), "broadcast"), root, r.comm, r.stream));
    }
    group.end();
  }
  NcclWork(tensors, r.device, r.stream).wait();
}

void NcclCommunicator::barrier(int rank) {
  Rank& r = local(rank, "barrier");
  cuda::DeviceGuard guard(r.device);
  order_after(r.stream, cuda::current_stream(r.device));
  {
    Group group;
    EMBER_NCCL_CHECK(ncclAllReduce(r.scratch, r.scratch, 1, ncclFloat32, ncclSum, r.comm, r.stream));
    group.end();
  }
  EMBER_CUDA_CHECK(cudaStreamSynchronize(r.stream));
}

}  // namespace ember::parallel
