// Run by `mpirun -np N`: every rank trains its shard of each batch through DataParallel over
// MPI, then compares the trained weights with a single-process full-batch run of the same steps
// (which every rank computes on its own). Rank 0 reports; any rank's mismatch fails the job.
#include <cmath>
#include <cstdio>

#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/data/dataloader.h"
#include "ember/nn/functional.h"
#include "ember/nn/linear.h"
#include "ember/optim/sgd.h"
#include "ember/parallel/data_parallel.h"
#include "ember/parallel/distributed.h"

namespace F = ember::nn::functional;
using ember::Tensor;

namespace {

struct Mlp : ember::nn::Module {
  ember::nn::Linear fc1{6, 11}, fc2{11, 4};
  Mlp() { register_modules({{"fc1", fc1}, {"fc2", fc2}}); }
  Tensor forward(const Tensor& x) override { return fc2(F::relu(fc1(x))); }
};

std::shared_ptr<ember::data::Dataset> make_data() {
  ember::manual_seed(100);
  const int64_t n = 160;  // batches of 25: six of 25 (13 + 12 over 2 ranks) and one of 10
  Tensor x = ember::randn({n, 6});
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) y.push_back((i * 5 + 1) % 4);
  return std::make_shared<ember::data::TensorDataset>(x, ember::tensor(y));
}

Tensor loss_fn(const Tensor& out, const Tensor& target) { return F::cross_entropy(out, target); }

}  // namespace

int main() {
  try {
    ember::parallel::Distributed dist = ember::parallel::init_distributed(false);
    auto data = make_data();
    const ember::optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.5};
    const int epochs = 2;

    // The reference: one process, the whole batch, weights from seed 1.
    ember::manual_seed(1);
    Mlp reference;
    ember::optim::SGD ref_opt(reference.parameters(), sgd);
    ember::data::DataLoader whole(data, {.batch_size = 25, .shuffle = true, .seed = 3});
    for (int epoch = 0; epoch < epochs; ++epoch) {
      whole.set_epoch(static_cast<uint64_t>(epoch));
      for (auto [inputs, target] : whole) {
        ref_opt.zero_grad();
        loss_fn(reference.forward(inputs), target).backward();
        ref_opt.step();
      }
    }

    // Distributed: every rank starts from different weights (seed 1 + rank); the broadcast in
    // DataParallel makes them rank 0's.
    ember::manual_seed(1 + static_cast<uint64_t>(dist.rank));
    Mlp model;
    ember::parallel::DataParallel dp(model, dist.comm, {.bucket_bytes = 200, .first_bucket_bytes = 16});
    auto opt = dp.make_optimizer<ember::optim::SGD>(sgd);
    ember::data::DataLoader shard(data, {.batch_size = 25, .shuffle = true, .seed = 3,
                                         .distributed = {.num_replicas = dist.world_size, .rank = dist.rank}});
    for (int epoch = 0; epoch < epochs; ++epoch) {
      shard.set_epoch(static_cast<uint64_t>(epoch));
      for (auto [inputs, target] : shard) {
        opt.zero_grad();
        dp.train_step(inputs, target, loss_fn);
        opt.step();
      }
    }
    dp.check_replicas();  // throws on a rank whose weights differ from rank 0's

    double worst = 0;
    auto expected = reference.named_parameters();
    auto got = model.named_parameters();
    for (size_t i = 0; i < got.size(); ++i) {
      Tensor a = got[i].second.detach().to(ember::kFloat64), b = expected[i].second.detach().to(ember::kFloat64);
      double diff = 0, scale = 1e-12;
      for (int64_t k = 0; k < a.numel(); ++k) {
        diff = std::max(diff, std::abs(a.data<double>()[k] - b.data<double>()[k]));
        scale = std::max(scale, std::abs(b.data<double>()[k]));
      }
      worst = std::max(worst, diff / scale);
    }
    const bool ok = worst < 1e-5;
    if (!ok) std::fprintf(stderr, "rank %d: weights differ from the single-process run by %.3g\n", dist.rank, worst);
    std::vector<Tensor> flag{ember::full({1}, ok ? 0.0 : 1.0)};
    dist.comm->all_reduce(dist.rank, flag);
    const bool all_ok = flag[0].item<float>() == 0.0f;
    if (dist.is_root()) {
      std::printf("%d ranks, %zu steps per rank: weights %s the single-process full-batch run (rank 0: "
                  "relative error %.3g)\n", dist.world_size, epochs * shard.size(), all_ok ? "match" : "DO NOT match",
                  worst);
    }
    return all_ok ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "train_compare: %s\n", error.what());
    return 1;
  }
}
