// BatchNorm1d / BatchNorm2d and F::batch_norm: PyTorch's values (tests/gen_norm_fixtures.py),
// float64 finite differences, the module's parameters and buffers, the error messages, and the
// CPU kernels' independence of the thread count.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/batch_norm.h"
#include "ember/kernels/cpu/threading.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/functional.h"
#include "ember/nn/normalization.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

namespace {

// Replays a fixture's steps on an ember layer built with the fixture's options.
template <class Layer>
void check_training_fixture(const std::string& name, int64_t features, double eps = 1e-5) {
  auto f = fixture("norm_" + name);
  const Tensor o = f.at("options");
  const double momentum = o.at<double>({0});
  const bool affine = o.at<double>({1}) != 0, track = o.at<double>({2}) != 0;
  Layer layer(features, {.eps = eps,
                         .momentum = momentum < 0 ? std::nullopt : std::optional<double>(momentum),
                         .affine = affine,
                         .track_running_stats = track});
  if (affine) {
    ember::NoGradGuard no_grad;
    layer.weight.copy_(f.at("weight"));
    layer.bias.copy_(f.at("bias"));
  }
  layer.train();
  for (int step = 0; f.count("step" + std::to_string(step) + "_x"); ++step) {
    const std::string p = "step" + std::to_string(step) + "_", what = name + " " + p;
    Tensor x = f.at(p + "x").clone().requires_grad_();
    layer.zero_grad();
    Tensor y = layer(x);
    require_close(y, f.at(p + "y"), what + "forward");
    y.backward(f.at(p + "dy"));
    require_close(x.grad(), f.at(p + "dx"), what + "input gradient");
    if (affine) {
      require_close(layer.weight.grad(), f.at(p + "dweight"), what + "weight gradient");
      require_close(layer.bias.grad(), f.at(p + "dbias"), what + "bias gradient");
    }
    if (track) {
      require_close(layer.running_mean, f.at(p + "running_mean"), what + "running_mean");
      require_close(layer.running_var, f.at(p + "running_var"), what + "running_var");
      CHECK(layer.num_batches_tracked.dtype() == ember::kInt64);
      CHECK(layer.num_batches_tracked.template item<int64_t>() ==
            f.at(p + "num_batches_tracked").template item<int64_t>());
    }
  }
  layer.eval();
  require_close(layer(f.at("eval_x")), f.at("eval_y"), name + " eval forward");
}

}  // namespace

TEST_CASE("BatchNorm2d matches PyTorch over three training steps, momentum 0.1 and None, affine or not") {
  for (const char* name : {"bn2d_momentum", "bn2d_cumulative", "bn2d_momentum_noaffine", "bn2d_cumulative_noaffine",
                           "bn2d_untracked"}) {
    check_training_fixture<ember::nn::BatchNorm2d>(name, 16);
  }
}

TEST_CASE("BatchNorm1d matches PyTorch on [N, C] and [N, C, L] inputs") {
  check_training_fixture<ember::nn::BatchNorm1d>("bn1d_2d", 8, 1e-3);
  check_training_fixture<ember::nn::BatchNorm1d>("bn1d_3d", 8);
}

TEST_CASE("a PyTorch BatchNorm2d state_dict loads and gives PyTorch's evaluation output") {
  ember::nn::BatchNorm2d layer(16);
  ember::load(layer, fixture_path("norm_bn2d_state"));
  CHECK(layer.num_batches_tracked.dtype() == ember::kInt64);
  CHECK(layer.num_batches_tracked.dim() == 0);
  CHECK(layer.num_batches_tracked.item<int64_t>() == 7);
  layer.eval();
  auto io = fixture("norm_bn2d_state_io");
  require_close(layer(io.at("x")), io.at("y"), "loaded BatchNorm2d eval forward");
  SECTION("and the same in float64") {
    layer.to(ember::kFloat64);
    CHECK(layer.running_mean.dtype() == ember::kFloat64);
    CHECK(layer.num_batches_tracked.dtype() == ember::kInt64);  // PyTorch keeps the count int64
    require_close(layer(io.at("x").to(ember::kFloat64)), io.at("y"), "loaded BatchNorm2d float64 eval forward");
  }
}

TEST_CASE("BatchNorm2d registers PyTorch's names in PyTorch's order and saves its 0-dim int64 count") {
  ember::nn::BatchNorm2d layer(4);
  auto params = layer.named_parameters();
  auto buffers = layer.named_buffers();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "weight");
  CHECK(params[1].first == "bias");
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[0].first == "running_mean");
  CHECK(buffers[1].first == "running_var");
  CHECK(buffers[2].first == "num_batches_tracked");
  CHECK(ember::allclose(layer.weight, ember::ones({4})));
  CHECK(ember::allclose(layer.running_var, ember::ones({4})));
  CHECK(layer.num_batches_tracked.sizes().empty());

  layer.train();
  layer(ember::randn({3, 4, 2, 2}));
  layer(ember::randn({3, 4, 2, 2}));
  CHECK(layer.num_batches_tracked.item<int64_t>() == 2);
  const std::string path = "test_batch_norm_roundtrip.safetensors";
  ember::save(layer, path);
  ember::nn::BatchNorm2d loaded(4);
  ember::load(loaded, path);
  std::remove(path.c_str());
  CHECK(loaded.num_batches_tracked.dtype() == ember::kInt64);
  CHECK(loaded.num_batches_tracked.item<int64_t>() == 2);
  CHECK(ember::allclose(loaded.running_mean, layer.running_mean, 0, 0));
  CHECK(ember::allclose(loaded.running_var, layer.running_var, 0, 0));

  ember::nn::BatchNorm2d bare(3, {.affine = false, .track_running_stats = false});
  CHECK(bare.named_parameters().empty());
  CHECK(bare.named_buffers().empty());
}

TEST_CASE("BatchNorm prints as PyTorch does") {
  CHECK(ember::nn::BatchNorm2d(16).repr() ==
        "BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  CHECK(ember::nn::BatchNorm1d(8, {.eps = 0.001, .momentum = std::nullopt, .affine = false}).repr() ==
        "BatchNorm1d(8, eps=0.001, momentum=None, affine=False, track_running_stats=True)");
  CHECK(ember::nn::BatchNorm2d(3, {.momentum = 0.01, .track_running_stats = false}).repr() ==
        "BatchNorm2d(3, eps=1e-05, momentum=0.01, affine=True, track_running_stats=False)");
}

TEST_CASE("batch_norm gradients match finite differences, training and evaluation, odd shapes") {
  ember::manual_seed(21);
  for (const ember::Shape& shape : std::vector<ember::Shape>{{5, 3}, {1, 2, 7}, {3, 2, 5}, {1, 3, 3, 4}, {2, 1, 3, 5}}) {
    const int64_t c = shape[1];
    const std::string where = ember::shape_str(shape);
    check_gradients("batch_norm training " + where, [](const std::vector<Tensor>& in) {
      return F::batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5);
    }, {ember::randn(shape), ember::add(ember::randn({c}), 1.0), ember::randn({c})});
    check_gradients("batch_norm training without weight and bias " + where, [](const std::vector<Tensor>& in) {
      return F::batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
    }, {ember::randn(shape)});
    Tensor mean = ember::randn({c}, {.dtype = ember::kFloat64});
    Tensor var = ember::add(ember::rand({c}, {.dtype = ember::kFloat64}), 0.5);
    check_gradients("batch_norm eval " + where, [&](const std::vector<Tensor>& in) {
      return F::batch_norm(in[0], mean, var, in[1], in[2], false, 0.1, 1e-5);
    }, {ember::randn(shape), ember::randn({c}), ember::randn({c})});
  }
}

TEST_CASE("batch_norm takes non-contiguous inputs and gives the contiguous result") {
  ember::manual_seed(22);
  Tensor base = ember::randn({3, 4, 5, 6});
  Tensor x = base.transpose(2, 3);
  REQUIRE_FALSE(x.is_contiguous());
  Tensor w = ember::randn({4}), b = ember::randn({4});
  CHECK(ember::allclose(F::batch_norm(x, Tensor(), Tensor(), w, b, true),
                        F::batch_norm(x.contiguous(), Tensor(), Tensor(), w, b, true), 1e-5, 1e-5));
  // And its gradient, in float64 against finite differences, through a transposed view.
  check_gradients("batch_norm transposed input", [](const std::vector<Tensor>& in) {
    return F::batch_norm(in[0].transpose(0, 2).transpose(1, 2), Tensor(), Tensor(), in[1], in[2], true);
  }, {ember::randn({3, 2, 4}), ember::randn({3}), ember::randn({3})});
}

TEST_CASE("batch_norm updates the running statistics in place with the unbiased variance") {
  Tensor x = ember::tensor({1.0f, 2.0f, 3.0f, 6.0f}).reshape({4, 1});
  Tensor running_mean = ember::zeros({1}), running_var = ember::ones({1});
  const Tensor mean_handle = running_mean;
  F::batch_norm(x, running_mean, running_var, Tensor(), Tensor(), true, 0.5);
  CHECK(mean_handle.is_same(running_mean));
  CHECK(running_mean.item<float>() == Approx(0.5 * 3.0));
  // Unbiased variance of {1, 2, 3, 6}: 14 / 3.
  CHECK(running_var.item<float>() == Approx(0.5 * 1.0 + 0.5 * 14.0 / 3.0));
  // Evaluation uses them and leaves them alone.
  Tensor y = F::batch_norm(x, running_mean, running_var, Tensor(), Tensor(), false);
  CHECK(y.at<float>({0, 0}) == Approx((1.0 - 1.5) / std::sqrt(0.5 + 7.0 / 3.0 + 1e-5)));
  CHECK(running_mean.item<float>() == Approx(1.5));
}

TEST_CASE("batch_norm and BatchNorm reject bad arguments with messages naming the problem") {
  Tensor x = ember::randn({8, 8, 10, 10});
  Tensor stats16 = ember::zeros({16});
  CHECK_THROWS_WITH(F::batch_norm(x, stats16, ember::ones({16})),
                    Catch::Contains("batch_norm: expected input with 16 channels to match running_mean [16], got input [8, 8, 10, 10]"));
  CHECK_THROWS_WITH(F::batch_norm(x, Tensor(), Tensor(), ember::ones({16}), Tensor(), true),
                    Catch::Contains("batch_norm: expected input with 16 channels to match weight [16], got input [8, 8, 10, 10]"));
  CHECK_THROWS_WITH(F::batch_norm(ember::randn({1, 16}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm: Expected more than 1 value per channel when training, got input size [1, 16]"));
  CHECK_THROWS_WITH(F::batch_norm(ember::randn({4}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm: expected input [N, C, *] with at least 2 dimensions, got 1-D input [4]"));
  CHECK_THROWS_WITH(F::batch_norm(x, Tensor(), Tensor()),
                    Catch::Contains("batch_norm: running_mean and running_var are needed when not training"));
  CHECK_THROWS_WITH(F::batch_norm(x, ember::zeros({8}), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm: running_mean and running_var must both be defined or both undefined"));
  CHECK_THROWS_WITH(F::batch_norm(x, ember::zeros({8}), ember::ones({8}), Tensor(), Tensor(), true, std::nullopt),
                    Catch::Contains("batch_norm: momentum=None"));
  CHECK_THROWS_WITH(F::batch_norm(x, ember::zeros({8}, {.dtype = ember::kFloat64}), ember::ones({8})),
                    Catch::Contains("batch_norm: input is float32 but running_mean is float64"));

  ember::nn::BatchNorm2d bn2d(16);
  CHECK_THROWS_WITH(bn2d(ember::randn({8, 16})), Catch::Contains("BatchNorm2d: expected 4-D input (got 2-D input [8, 16])"));
  CHECK_THROWS_WITH(bn2d(x), Catch::Contains("batch_norm: expected input with 16 channels to match running_mean [16], got input [8, 8, 10, 10]"));
  CHECK_THROWS_WITH(bn2d(ember::randn({1, 16, 1, 1})),
                    Catch::Contains("Expected more than 1 value per channel when training, got input size [1, 16, 1, 1]"));
  ember::nn::BatchNorm1d bn1d(16);
  CHECK_THROWS_WITH(bn1d(x), Catch::Contains("BatchNorm1d: expected 2-D or 3-D input (got 4-D input [8, 8, 10, 10])"));
  CHECK_THROWS_WITH(ember::nn::BatchNorm1d(0), Catch::Contains("BatchNorm1d: num_features must be positive, got 0"));
  CHECK_THROWS_WITH(ember::nn::BatchNorm2d(4, {.momentum = 1.5}), Catch::Contains("BatchNorm2d: momentum must be in [0, 1]"));
}

TEMPLATE_TEST_CASE("batch_norm's CPU kernels give the same bits for every thread count", "", float, double) {
  // In double the shards' order shows in the last bits; in float it mostly rounds away.
  using T = TestType;
  // 13 images in 8 shards of one or two (Note [batch norm in memory order]); 39,000 elements, above
  // the size where the kernels fork.
  namespace cpu = ember::kernels::cpu;
  const ember::kernels::BatchNormShape s{13, 5, 600};
  std::mt19937 rng(5);
  std::normal_distribution<T> dist(0.5, 2.0);
  std::vector<T> x(static_cast<size_t>(s.numel())), dy(x.size()), w(5), b(5);
  for (auto* v : {&x, &dy, &w, &b})
    for (T& e : *v) e = dist(rng);
  const int saved = cpu::get_num_threads();
  std::vector<T> first;
  for (int threads : {1, 2, 3, 4}) {
    cpu::set_num_threads(threads);
    std::vector<T> y(x.size()), mean(5), invstd(5), running_mean(5, T(0)), running_var(5, T(1));
    std::vector<T> dx(x.size()), dw(5), db(5), dx_eval(x.size());
    cpu::batch_norm_forward_training(x.data(), w.data(), b.data(), y.data(), mean.data(), invstd.data(),
                                     running_mean.data(), running_var.data(), 0.1, 1e-5, s);
    cpu::batch_norm_backward(dy.data(), x.data(), mean.data(), invstd.data(), w.data(), dx.data(), dw.data(),
                             db.data(), true, s);
    cpu::batch_norm_backward(dy.data(), x.data(), running_mean.data(), invstd.data(), w.data(), dx_eval.data(),
                             static_cast<T*>(nullptr), static_cast<T*>(nullptr), false, s);
    std::vector<T> all;
    for (const auto* v : {&y, &mean, &invstd, &running_mean, &running_var, &dx, &dw, &db, &dx_eval}) {
      all.insert(all.end(), v->begin(), v->end());
    }
    if (first.empty()) first = all;
    CAPTURE(threads);
    CHECK(all == first);
  }
  cpu::set_num_threads(saved);
}
