#include "ember/parallel/cpu_communicator.h"

#include "ember/common/error.h"
#include "ember/core/autograd.h"

namespace ember::parallel {

CpuCommunicator::CpuCommunicator(int world_size) : world_size_(world_size), published_(world_size) {
  EMBER_CHECK(world_size >= 1, "CpuCommunicator: world_size must be at least 1, got ", world_size);
}

std::vector<int> CpuCommunicator::local_ranks() const {
  std::vector<int> ranks(world_size_);
  for (int r = 0; r < world_size_; ++r) ranks[r] = r;
  return ranks;
}

void CpuCommunicator::check_rank(int rank, const char* op) const {
  EMBER_CHECK(rank >= 0 && rank < world_size_, op, ": rank ", rank, " is out of range for world size ",
              world_size_);
}

void CpuCommunicator::wait_for_all() {
  std::unique_lock lock(mutex_);
  uint64_t generation = generation_;
  if (++waiting_ == world_size_) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
  } else {
    arrived_.wait(lock, [&] { return generation_ != generation; });
  }
}

void CpuCommunicator::barrier(int rank) {
  check_rank(rank, "barrier");
  wait_for_all();
}

namespace {

// Checks that every rank published the same list of CPU tensors (contiguous, same shapes).
void check_matching(const std::vector<std::vector<Tensor>*>& published, const char* op) {
  const std::vector<Tensor>& first = *published[0];
  for (size_t r = 1; r < published.size(); ++r) {
    const std::vector<Tensor>& other = *published[r];
    EMBER_CHECK(other.size() == first.size(), op, ": rank 0 passed ", first.size(), " tensors, rank ", r,
                " passed ", other.size());
    for (size_t i = 0; i < first.size(); ++i) {
      EMBER_CHECK(other[i].sizes() == first[i].sizes() && other[i].dtype() == first[i].dtype(), op,
                  ": tensor ", i, " is ", first[i].sizes(), " ", dtype_name(first[i].dtype()), " on rank 0 but ",
                  other[i].sizes(), " ", dtype_name(other[i].dtype()), " on rank ", r);
    }
  }
}

}  // namespace

void CpuCommunicator::all_reduce(int rank, std::vector<Tensor>& tensors, ReduceOp op) {
  check_rank(rank, "all_reduce");
  published_[rank] = &tensors;
  wait_for_all();
  // Every rank checks every rank's tensors, so that a bad tensor on one rank makes all of them
  // throw together instead of leaving the others waiting at the next barrier.
  for (size_t r = 0; r < published_.size(); ++r) {
    for (const Tensor& t : *published_[r]) {
      EMBER_CHECK(t.defined() && t.device().is_cpu() && t.is_contiguous(), "all_reduce: CpuCommunicator needs "
                  "contiguous CPU tensors, rank ", r, " passed ", !t.defined() ? "an undefined one" :
                  t.device().is_cpu() ? "a non-contiguous one" : "one on " + t.device().str());
      EMBER_CHECK(is_floating(t.dtype()), "all_reduce: expected floating tensors, got ", dtype_name(t.dtype()),
                  " on rank ", r);
    }
  }
  check_matching(published_, "all_reduce");
  for (Tensor& t : tensors) t.mutable_data_ptr("all_reduce");  // every rank writes every rank's tensors below
  // Each rank reduces the elements [begin, end) of every tensor into a scratch copy, then all ranks
  // wait, then each copies its slice's result into every rank's tensor.
  std::vector<std::vector<double>> partial(tensors.size());
  std::vector<std::pair<int64_t, int64_t>> ranges(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    int64_t n = tensors[i].numel();
    int64_t begin = n * rank / world_size_, end = n * (rank + 1) / world_size_;
    ranges[i] = {begin, end};
    partial[i].assign(static_cast<size_t>(end - begin), 0.0);
    visit_floating(tensors[i].dtype(), "all_reduce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int r = 0; r < world_size_; ++r) {
        const T* src = (*published_[r])[i].template data<T>();
        for (int64_t k = begin; k < end; ++k) partial[i][k - begin] += static_cast<double>(src[k]);
      }
    });
  }
  wait_for_all();
  double scale = op == ReduceOp::Average ? 1.0 / world_size_ : 1.0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t begin = ranges[i].first, end = ranges[i].second;  // not a structured binding: clang 14
    visit_floating(tensors[i].dtype(), "all_reduce", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int r = 0; r < world_size_; ++r) {
        T* dst = (*published_[r])[i].template data<T>();
        for (int64_t k = begin; k < end; ++k) dst[k] = static_cast<T>(partial[i][k - begin] * scale);
      }
    });
  }
  wait_for_all();
}

void CpuCommunicator::broadcast(int rank, std::vector<Tensor>& tensors, int root) {
  check_rank(rank, "broadcast");
  check_rank(root, "broadcast");
  published_[rank] = &tensors;
  wait_for_all();
  check_matching(published_, "broadcast");
  if (rank != root) {
    NoGradGuard no_grad;
    for (size_t i = 0; i < tensors.size(); ++i) tensors[i].detach().copy_((*published_[root])[i]);
  }
  wait_for_all();
}

}  // namespace ember::parallel
