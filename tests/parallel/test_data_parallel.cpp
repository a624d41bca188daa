// DataParallel over CPU replicas: the same gradients and weights as one model on the full batch.
#include <catch2/catch.hpp>

#include <cmath>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/data/dataloader.h"
#include "examples/mnist/net.h"
#include "ember/nn/functional.h"
#include "ember/nn/linear.h"
#include "ember/optim/sgd.h"
#include "ember/parallel/data_parallel.h"
#include "tests/parallel/replica_checks.h"

namespace F = ember::nn::functional;
using ember::Device;
using ember::Tensor;
using ember::parallel::DataParallel;
using ember::parallel::DataParallelOptions;
using replica_checks::check_parameters_match;
using replica_checks::cross_entropy_loss;
using replica_checks::cycle_labels;
using replica_checks::relative_error;

namespace {

struct Mlp : ember::nn::Module {
  ember::nn::Linear fc1{7, 13}, fc2{13, 5};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(F::relu(fc1(x))); }
};

// fc2 is never used: its parameters get no gradient on any replica.
struct WithUnused : ember::nn::Module {
  ember::nn::Linear fc1{7, 5}, unused{3, 3};
  WithUnused() { register_modules({{"fc1", fc1}, {"unused", unused}}); }
  Tensor forward(const Tensor& x) override { return fc1(x); }
};

std::vector<Device> cpus(int n) { return std::vector<Device>(static_cast<size_t>(n), Device::cpu()); }

template <class M>
void copy_weights(M& to, const M& from) {
  to.load_state_dict(from.state_dict());
}

// Bucket caps that split Mlp's layers: in reverse order fc2.bias (20 B) alone (first cap 100 B),
// then fc2.weight (260 B) + fc1.bias (52 B), then fc1.weight (364 B): boundaries inside fc2 and fc1.
DataParallelOptions split_buckets() { return {.bucket_bytes = 400, .first_bucket_bytes = 100}; }

}  // namespace

TEST_CASE("DataParallel buckets hold parameters in reverse order, the first one small") {
  Mlp model;
  DataParallel dp(model, cpus(2), split_buckets());
  // parameters(): fc1.weight 0, fc1.bias 1, fc2.weight 2, fc2.bias 3.
  CHECK(dp.buckets() == std::vector<std::vector<size_t>>{{3}, {2, 1}, {0}});
  Mlp other;
  DataParallel defaults(other, cpus(2));
  CHECK(defaults.buckets() == std::vector<std::vector<size_t>>{{3, 2, 1, 0}});
}

TEST_CASE("DataParallel on 2 and 3 CPU replicas gives the full-batch gradient, uneven splits included") {
  for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
    for (int replicas : {1, 2, 3}) {
      for (int64_t batch : {65, 7, 2}) {
        INFO(ember::dtype_name(dtype) << ", " << replicas << " replicas, batch " << batch);
        ember::manual_seed(7);
        Mlp reference;
        reference.to(dtype);
        Mlp model;
        model.to(dtype);
        copy_weights(model, reference);
        DataParallel dp(model, cpus(replicas), split_buckets());
        Tensor x = ember::randn({batch, 7}, {.dtype = dtype});
        Tensor y = cycle_labels(batch, 5);
        Tensor loss = dp.train_step(x, y, cross_entropy_loss);
        Tensor expected_loss = F::cross_entropy(reference.forward(x), y);
        expected_loss.backward();
        CHECK(relative_error(loss, expected_loss) < 1e-5);
        auto expected = reference.named_parameters();
        for (int r = 0; r < replicas; ++r) {
          auto got = dp.replica(static_cast<size_t>(r)).named_parameters();
          for (size_t i = 0; i < got.size(); ++i) {
            INFO("replica " << r << " " << got[i].first);
            REQUIRE(got[i].second.grad().defined());
            CHECK(relative_error(got[i].second.grad(), expected[i].second.grad()) < 1e-5);
          }
        }
        CHECK(relative_error(dp.last_output(), reference.forward(x)) < 1e-5);
      }
    }
  }
}

TEST_CASE("DataParallel: 10 SGD steps on 2 and 3 replicas give the single-model weights, replicas identical") {
  for (int replicas : {2, 3}) {
    INFO(replicas << " replicas");
    ember::manual_seed(3);
    Mlp reference;
    Mlp model;
    copy_weights(model, reference);
    ember::optim::SGD ref_opt(reference.parameters(), {.lr = 0.1, .momentum = 0.5});
    DataParallelOptions options = split_buckets();
    options.check_replicas = true;
    DataParallel dp(model, cpus(replicas), options);
    auto opt = dp.make_optimizer<ember::optim::SGD>({.lr = 0.1, .momentum = 0.5});
    for (int step = 0; step < 10; ++step) {
      int64_t batch = 31 + step;  // a different, mostly uneven split every step
      Tensor x = ember::randn({batch, 7});
      Tensor y = cycle_labels(batch, 5);
      opt.zero_grad();
      dp.train_step(x, y, cross_entropy_loss);
      opt.step();
      ref_opt.zero_grad();
      F::cross_entropy(reference.forward(x), y).backward();
      ref_opt.step();
    }
    REQUIRE_NOTHROW(dp.check_replicas());
    for (int r = 0; r < replicas; ++r) {
      check_parameters_match(dp.replica(static_cast<size_t>(r)), reference, 1e-5, "replica " + std::to_string(r));
    }
    // The optimizer's state looks like a single-device optimizer's (checkpoints move between them).
    CHECK(opt.state_dict().size() == ref_opt.state_dict().size());
  }
}

TEST_CASE("DataParallel trains the tutorial network on 2 CPU replicas like one model") {
  ember::manual_seed(11);
  ember::examples::Net reference;
  ember::examples::Net model;
  copy_weights(model, reference);
  ember::optim::SGD ref_opt(reference.parameters(), {.lr = 0.01, .momentum = 0.5});
  DataParallel dp(model, cpus(2), {.bucket_bytes = 8000, .first_bucket_bytes = 100});
  auto opt = dp.make_optimizer<ember::optim::SGD>({.lr = 0.01, .momentum = 0.5});
  for (int step = 0; step < 3; ++step) {
    Tensor x = ember::randn({9, 1, 28, 28});
    Tensor y = cycle_labels(9, 10);
    opt.zero_grad();
    dp.train_step(x, y, cross_entropy_loss);
    opt.step();
    ref_opt.zero_grad();
    F::cross_entropy(reference.forward(x), y).backward();
    ref_opt.step();
  }
  CHECK(dp.buckets().size() > 2);
  check_parameters_match(model, reference, 1e-5, "model");
  REQUIRE_NOTHROW(dp.check_replicas());
}

TEST_CASE("DataParallel inference splits, runs every replica and gathers, without a graph") {
  ember::manual_seed(5);
  Mlp model;
  DataParallel dp(model, cpus(3));
  Tensor x = ember::randn({10, 7});
  ember::NoGradGuard no_grad;
  Tensor out = dp.forward(x);
  CHECK(out.sizes() == ember::Shape{10, 5});
  CHECK(!out.requires_grad());
  CHECK(relative_error(out, model.forward(x)) < 1e-6);
}

TEST_CASE("DataParallel: unused parameters and replicas with an empty shard still reduce together") {
  ember::manual_seed(9);
  WithUnused reference;
  WithUnused model;
  copy_weights(model, reference);
  DataParallel dp(model, cpus(3), {.bucket_bytes = 64, .first_bucket_bytes = 16});
  Tensor x = ember::randn({2, 7});  // 2 rows over 3 replicas: replica 2 has none
  Tensor y = ember::tensor<int64_t>({1, 4});
  dp.train_step(x, y, cross_entropy_loss);
  F::cross_entropy(reference.forward(x), y).backward();
  for (size_t r = 0; r < 3; ++r) {
    auto got = dp.replica(r).named_parameters();
    CHECK(relative_error(got[0].second.grad(), reference.fc1.weight.grad()) < 1e-5);
    CHECK(relative_error(got[1].second.grad(), reference.fc1.bias.grad()) < 1e-5);
    CHECK(ember::allclose(got[2].second.grad(), ember::zeros({3, 3})));  // no gradient anywhere: zeros
  }
}

TEST_CASE("DataParallel leaves the default generator as it was") {
  ember::manual_seed(21);
  Tensor expected = ember::rand({4});
  ember::manual_seed(21);
  Mlp model;  // draws, in both runs
  ember::manual_seed(21);
  Mlp model2;
  DataParallel dp(model2, cpus(3));  // replicas draw their own init, then restore the offset
  (void)dp;
  Tensor after_dp = ember::rand({4});
  ember::manual_seed(21);
  Mlp model3;
  Tensor after_model = ember::rand({4});
  CHECK(ember::allclose(after_dp, after_model));
}

TEST_CASE("DataParallel removes its grad-ready hooks from the model when it is destroyed") {
  Mlp model;
  auto hook_count = [&] {
    size_t n = 0;
    for (const Tensor& p : model.parameters()) n += p.impl()->autograd ? p.impl()->autograd->grad_ready_hooks.size() : 0;
    return n;
  };
  {
    DataParallel dp(model, cpus(2));
    CHECK(hook_count() == model.parameters().size());
    dp.train_step(ember::randn({6, 7}), cycle_labels(6, 5), cross_entropy_loss);
  }
  CHECK(hook_count() == 0);
  // The model trains on its own afterwards, and a second wrapper registers afresh.
  ember::sum(model.forward(ember::randn({3, 7}))).backward();
  DataParallel again(model, cpus(2));
  CHECK(hook_count() == model.parameters().size());
}

TEST_CASE("DataParallel errors name what was expected") {
  Mlp model;
  REQUIRE_THROWS_WITH(DataParallel(model, std::vector<Device>{}), Catch::Contains("expected at least one device"));
  DataParallel dp(model, cpus(2));
  REQUIRE_THROWS_WITH(dp.train_step(ember::randn({4, 7}), ember::zeros({3}, {.dtype = ember::kInt64}), cross_entropy_loss),
                      Catch::Contains("inputs have 4 rows but the target [3]"));
  REQUIRE_THROWS_WITH(dp.forward(ember::randn({0, 7})), Catch::Contains("expected at least one row"));
  // A failure inside one replica's forward reaches the caller, and the replicas stay usable.
  REQUIRE_THROWS(dp.train_step(ember::randn({4, 6}), ember::zeros({4}, {.dtype = ember::kInt64}), cross_entropy_loss));
  REQUIRE_NOTHROW(dp.train_step(ember::randn({4, 7}), ember::zeros({4}, {.dtype = ember::kInt64}), cross_entropy_loss));
  if (!ember::cuda::is_available()) {
    REQUIRE_THROWS_WITH(DataParallel(model, {Device::cuda(0)}), Catch::Contains("cuda:0 is not available (0 CUDA devices found)"));
  }
}

TEST_CASE("DistributedSampler: every rank takes its rows of each global batch, 33 + 32 for 65 over 2") {
  CHECK(ember::data::shard_range(65, 0, 2) == std::pair<int64_t, int64_t>{0, 33});
  CHECK(ember::data::shard_range(65, 1, 2) == std::pair<int64_t, int64_t>{33, 65});
  CHECK(ember::data::shard_range(7, 2, 3) == std::pair<int64_t, int64_t>{5, 7});
  auto data = std::make_shared<ember::data::TensorDataset>(ember::arange(23.0, {.dtype = ember::kFloat32}).view({23, 1}),
                                                           ember::arange(23.0));
  ember::data::DataLoader whole(data, {.batch_size = 10, .shuffle = true, .seed = 4});
  std::vector<std::vector<Tensor>> global;
  for (auto [inputs, target] : whole) global.push_back({target});
  for (int world : {2, 3}) {
    std::vector<ember::data::DataLoader> ranks;
    for (int r = 0; r < world; ++r) {
      ranks.emplace_back(data, ember::data::DataLoaderOptions{.batch_size = 10, .shuffle = true, .seed = 4,
                                                               .distributed = {.num_replicas = world, .rank = r}});
    }
    // 23 = 10 + 10 + 3: with 3 ranks each gets one row of the last batch; with 2 too.
    for (auto& loader : ranks) REQUIRE(loader.size() == 3);
    std::vector<std::vector<int64_t>> seen(3);
    for (int r = 0; r < world; ++r) {
      size_t k = 0;
      for (auto [inputs, target] : ranks[static_cast<size_t>(r)]) {
        for (int64_t i = 0; i < target.numel(); ++i) seen[k].push_back(target.at<int64_t>({i}));
        ++k;
      }
    }
    for (size_t k = 0; k < 3; ++k) {
      std::vector<int64_t> expected;
      for (int64_t i = 0; i < global[k][0].numel(); ++i) expected.push_back(global[k][0].at<int64_t>({i}));
      CHECK(seen[k] == expected);
    }
  }
}
