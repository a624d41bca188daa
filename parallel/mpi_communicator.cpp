#include "ember/parallel/mpi_communicator.h"

#include <cstdlib>
#include <string>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/parallel/mpi_check.h"

namespace ember::parallel {

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

MPI_Datatype mpi_type(DType dtype, const char* op) {
  if (dtype == kFloat32) return MPI_FLOAT;
  if (dtype == kFloat64) return MPI_DOUBLE;
  throw Error(ember::detail::str(op, ": MpiCommunicator expects float32 or float64 tensors, got ", dtype_name(dtype)));
}

void check_tensors(const std::vector<Tensor>& tensors, const char* op) {
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.defined(), op, ": got an undefined tensor");
    EMBER_CHECK(t.device().is_cpu() && t.is_contiguous(), op, ": MpiCommunicator needs contiguous CPU tensors, "
                "got one on ", t.device(), t.is_contiguous() ? "" : " (non-contiguous)");
    mpi_type(t.dtype(), op);
    EMBER_CHECK(t.numel() <= INT32_MAX, op, ": a tensor of ", t.numel(), " elements is beyond MPI's int count");
  }
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void scale(const Tensor& t, double factor) {
  NoGradGuard no_grad;
  Tensor(t).mul_(factor);
}

class MpiWork final : public Work {
 public:
  MpiWork(std::vector<Tensor> tensors, std::vector<MPI_Request> requests, double factor)
      : tensors_(std::move(tensors)), requests_(std::move(requests)), factor_(factor) {}
  ~MpiWork() override {
    if (!done_) {
      try {
        wait();
      } catch (...) {  // a destructor must not throw; the error was MPI's, the job is failing
      }
    }
  }
  void wait() override {
    if (done_) return;
    done_ = true;
    EMBER_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    if (factor_ != 1.0) {
      for (Tensor& t : tensors_) scale(t, factor_);
    }
  }

 private:
  std::vector<Tensor> tensors_;
  std::vector<MPI_Request> requests_;
  double factor_;
  bool done_ = false;
};

}  // namespace

MpiCommunicator::MpiCommunicator() : impl_(new Impl) {
  int initialized = 0;
  EMBER_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    EMBER_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    std::atexit(finalize_at_exit);
  }
  EMBER_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  EMBER_MPI_CHECK(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  EMBER_MPI_CHECK(MPI_Comm_rank(impl_->comm, &rank_));
  EMBER_MPI_CHECK(MPI_Comm_size(impl_->comm, &world_size_));
  MPI_Comm node = MPI_COMM_NULL;
  EMBER_MPI_CHECK(MPI_Comm_split_type(impl_->comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  EMBER_MPI_CHECK(MPI_Comm_rank(node, &local_rank_));
  EMBER_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  EMBER_MPI_CHECK(MPI_Comm_free(&node));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
  delete impl_;
}

void MpiCommunicator::check_call(int rank, const char* op) const {
  EMBER_CHECK(rank == rank_, op, ": this process is MPI rank ", rank_, " of ", world_size_, ", got rank ", rank);
}

void MpiCommunicator::all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op) {
  all_reduce_async(rank, tensors, op)->wait();
}

std::unique_ptr<Work> MpiCommunicator::all_reduce_async(int rank, std::vector<Tensor> tensors, ReduceOp op) {
  check_call(rank, "all_reduce");
  check_tensors(tensors, "all_reduce");
  std::vector<MPI_Request> requests(tensors.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, tensors[i].mutable_data_ptr("all_reduce"), static_cast<int>(tensors[i].numel()),
                                   mpi_type(tensors[i].dtype(), "all_reduce"), MPI_SUM, impl_->comm, &requests[i]));
  }
  double factor = op == ReduceOp::Average ? 1.0 / world_size_ : 1.0;
  return std::make_unique<MpiWork>(std::move(tensors), std::move(requests), factor);
}

void MpiCommunicator::broadcast(int rank, std::vector<Tensor>& tensors, int root) {
  check_call(rank, "broadcast");
  EMBER_CHECK(root >= 0 && root < world_size_, "broadcast: root ", root, " is out of range for world size ", world_size_);
  check_tensors(tensors, "broadcast");
  for (Tensor& t : tensors) {
    EMBER_MPI_CHECK(MPI_Bcast(t.mutable_data_ptr("broadcast"), static_cast<int>(t.numel()),
                              mpi_type(t.dtype(), "broadcast"), root, impl_->comm));
  }
}

void MpiCommunicator::barrier(int rank) {
  check_call(rank, "barrier");
  EMBER_MPI_CHECK(MPI_Barrier(impl_->comm));
}

void MpiCommunicator::broadcast_bytes(void* data, size_t bytes, int root) {
  EMBER_CHECK(bytes <= INT32_MAX, "broadcast_bytes: ", bytes, " bytes is beyond MPI's int count");
  EMBER_MPI_CHECK(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, impl_->comm));
}

}  // namespace ember::parallel
