// CpuCommunicator: collectives between replicas on threads.
#include <catch2/catch.hpp>

#include <thread>

#include "ember/core/ops.h"
#include "ember/parallel/cpu_communicator.h"

using ember::Tensor;
using ember::parallel::CpuCommunicator;
using ember::parallel::ReduceOp;

namespace {

template <class Fn>
void on_ranks(int world, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE("all_reduce gives every rank the sum (or mean) of all ranks' tensors, repeatedly") {
  for (int world : {1, 2, 3}) {
    CpuCommunicator comm(world);
    std::vector<std::vector<Tensor>> per_rank(world);
    for (int r = 0; r < world; ++r) {
      per_rank[r] = {ember::full({5}, r + 1.0), ember::full({2, 3}, 10.0 * (r + 1), {.dtype = ember::kFloat64})};
    }
    on_ranks(world, [&](int r) {
      comm.all_reduce(r, per_rank[r]);
      comm.all_reduce(r, per_rank[r], ReduceOp::Average);  // a second round reuses the barrier
    });
    double total = world * (world + 1) / 2.0;
    for (int r = 0; r < world; ++r) {
      INFO("world " << world << " rank " << r);
      CHECK(ember::allclose(per_rank[r][0], ember::full({5}, total)));
      CHECK(ember::allclose(per_rank[r][1], ember::full({2, 3}, 10.0 * total, {.dtype = ember::kFloat64})));
    }
  }
}

TEST_CASE("broadcast copies the root's tensors to every rank") {
  CpuCommunicator comm(3);
  std::vector<std::vector<Tensor>> per_rank(3);
  for (int r = 0; r < 3; ++r) per_rank[r] = {ember::full({4}, static_cast<double>(r))};
  on_ranks(3, [&](int r) { comm.broadcast(r, per_rank[r], 1); });
  for (int r = 0; r < 3; ++r) CHECK(ember::allclose(per_rank[r][0], ember::full({4}, 1.0)));
}

TEST_CASE("communicator errors name the op and what differs") {
  REQUIRE_THROWS_WITH(CpuCommunicator(0), "CpuCommunicator: world_size must be at least 1, got 0");
  CpuCommunicator comm(1);
  std::vector<Tensor> ints{ember::zeros({2}, {.dtype = ember::kInt64})};
  REQUIRE_THROWS_WITH(comm.all_reduce(0, ints), Catch::Contains("expected floating tensors, got int64"));
  std::vector<Tensor> ok{ember::zeros({2})};
  REQUIRE_THROWS_WITH(comm.all_reduce(3, ok), Catch::Contains("rank 3 is out of range for world size 1"));
}
