// NcclCommunicator and DataParallel on CUDA devices: one GPU still runs every NCCL call path
// (ncclCommInitAll, the per-process ncclCommInitRank, all_reduce, broadcast, barrier, events);
// with two or more GPUs DataParallel also runs over two of them.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "examples/mnist/net.h"
#include "ember/nn/functional.h"
#include "ember/optim/sgd.h"
#include "ember/parallel/data_parallel.h"
#include "ember/parallel/nccl_communicator.h"
#include "tests/parallel/replica_checks.h"

namespace F = ember::nn::functional;
using ember::Device;
using ember::Tensor;
using ember::parallel::NcclCommunicator;
using ember::parallel::ReduceOp;
using replica_checks::check_parameters_match;
using replica_checks::cross_entropy_loss;
using replica_checks::cycle_labels;
using replica_checks::relative_error;

TEST_CASE("NcclCommunicator on one GPU: all_reduce, async all_reduce, broadcast and barrier") {
  for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
    INFO(ember::dtype_name(dtype));
    NcclCommunicator comm({Device::cuda(0)});
    REQUIRE(comm.world_size() == 1);
    REQUIRE(comm.local_ranks() == std::vector<int>{0});
    Tensor cpu = ember::randn({1000 + 37}, {.dtype = dtype});
    std::vector<Tensor> tensors{cpu.cuda(0), ember::full({3, 5}, 2.0, {.dtype = dtype}).cuda(0)};
    comm.all_reduce(0, tensors, ReduceOp::Sum);  // one rank: the sum is the tensor itself
    CHECK(relative_error(tensors[0], cpu) == 0);
    comm.all_reduce(0, tensors, ReduceOp::Average);
    CHECK(relative_error(tensors[1], ember::full({3, 5}, 2.0, {.dtype = dtype})) == 0);
    auto work = comm.all_reduce_async(0, tensors, ReduceOp::Sum);
    work->wait();
    work->wait();  // a second wait is a no-op
    CHECK(relative_error(tensors[0], cpu) == 0);
    comm.broadcast(0, tensors, 0);
    comm.barrier(0);
    CHECK(relative_error(tensors[0], cpu) == 0);
  }
}

TEST_CASE("NcclCommunicator per process (ncclCommInitRank with a fresh unique id)") {
  NcclCommunicator comm(NcclCommunicator::new_unique_id(), 1, 0, Device::cuda(0));
  std::vector<Tensor> tensors{ember::full({17}, 3.0).cuda(0)};
  comm.all_reduce(0, tensors);
  comm.barrier(0);
  CHECK(relative_error(tensors[0], ember::full({17}, 3.0)) == 0);
}

TEST_CASE("NcclCommunicator errors name the call and what was expected") {
  REQUIRE_THROWS_WITH(NcclCommunicator(std::vector<Device>{Device::cpu()}), Catch::Contains("expected CUDA devices"));
  REQUIRE_THROWS_WITH(NcclCommunicator({Device::cuda(0), Device::cuda(0)}), Catch::Contains("listed twice"));
  NcclCommunicator comm({Device::cuda(0)});
  std::vector<Tensor> on_cpu{ember::zeros({2})};
  REQUIRE_THROWS_WITH(comm.all_reduce(0, on_cpu), Catch::Contains("needs contiguous tensors on cuda:0"));
  std::vector<Tensor> ints{ember::zeros({2}, {.dtype = ember::kInt64}).cuda(0)};
  REQUIRE_THROWS_WITH(comm.all_reduce(0, ints), Catch::Contains("expects float32 or float64"));
  std::vector<Tensor> ok{ember::zeros({2}).cuda(0)};
  REQUIRE_THROWS_WITH(comm.all_reduce(1, ok), Catch::Contains("rank 1 is not driven by this process"));
}

namespace {

// DataParallel over `devices` against one CPU model on the full batch, a few SGD steps.
void check_data_parallel_matches_cpu(const std::vector<Device>& devices) {
  ember::manual_seed(5);
  ember::examples::Net reference;
  ember::examples::Net model;
  model.load_state_dict(reference.state_dict());
  ember::optim::SGD ref_opt(reference.parameters(), {.lr = 0.01, .momentum = 0.5});
  ember::parallel::DataParallel dp(model, devices, {.bucket_bytes = 8000, .first_bucket_bytes = 100,
                                                    .check_replicas = true});
  auto opt = dp.make_optimizer<ember::optim::SGD>({.lr = 0.01, .momentum = 0.5});
  for (int step = 0; step < 3; ++step) {
    Tensor x = ember::randn({33, 1, 28, 28});  // 33 rows: uneven over two GPUs
    Tensor y = cycle_labels(33, 10);
    opt.zero_grad();
    Tensor loss = dp.train_step(x, y, cross_entropy_loss);
    opt.step();
    ref_opt.zero_grad();
    Tensor expected_loss = F::cross_entropy(reference.forward(x), y);
    expected_loss.backward();
    ref_opt.step();
    CHECK(relative_error(loss, expected_loss) < 1e-4);
  }
  for (size_t r = 0; r < dp.replicas(); ++r) {
    check_parameters_match(dp.replica(r), reference, 1e-4, "replica " + std::to_string(r));
  }
  REQUIRE_NOTHROW(dp.check_replicas());
  ember::NoGradGuard no_grad;
  Tensor x = ember::randn({9, 1, 28, 28});
  CHECK(relative_error(dp.forward(x), reference.forward(x)) < 1e-4);
}

}  // namespace

TEST_CASE("DataParallel on [cuda:0] trains like one CPU model") { check_data_parallel_matches_cpu({Device::cuda(0)}); }

TEST_CASE("DataParallel on two GPUs trains like one CPU model") {
  if (ember::cuda::device_count() < 2) {
    WARN("one GPU: DataParallel over two GPUs not run");
    return;
  }
  check_data_parallel_matches_cpu({Device::cuda(0), Device::cuda(1)});
}
