// softmax / log_softmax over any dim, nll_loss and cross_entropy with their options (class
// weights, ignore_index, label smoothing, per-pixel targets) and their layers: against PyTorch
// (tests/gen_loss_fixtures.py, float32 and float64), against finite differences (float64), and
// their error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "ember/nn/loss.h"
#include "ember/nn/softmax.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Tensor;
using namespace ember::test;

namespace {

double tolerance(ember::DType dtype) { return dtype == ember::kFloat32 ? 1e-4 : 1e-10; }
std::string suffix(ember::DType dtype) { return dtype == ember::kFloat32 ? " (float32)" : " (float64)"; }

F::Reduction reduction_of(double code) {
  return code == 0 ? F::Reduction::None : code == 1 ? F::Reduction::Mean : F::Reduction::Sum;
}

const char* reduction_name(F::Reduction r) {
  return r == F::Reduction::None ? "none" : r == F::Reduction::Mean ? "mean" : r == F::Reduction::Sum ? "sum" : "batchmean";
}

// Labels in [0, classes) of the given shape, every `every`-th one (if any) set to ignore_index.
Tensor labels(const ember::Shape& shape, int64_t classes, int64_t ignore_index = -100, int64_t every = 0) {
  Tensor t = ember::empty(shape, {.dtype = ember::kInt64});
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<int64_t>()[i] = (every > 0 && i % every == every - 1) ? ignore_index : (i * 7 + 3) % classes;
  }
  return t;
}

}  // namespace

TEST_CASE("softmax and log_softmax match PyTorch over dims 0, 1, 2 and -1 of 3-D and 4-D inputs") {
  struct Case {
    const char* file;
    std::vector<int64_t> dims;
    bool log;
  };
  for (const Case& c : {Case{"softmax_3d", {0, 1, -1}, false}, Case{"softmax_4d", {0, 1, 2, -1}, false},
                        Case{"log_softmax_3d", {0, 1, -1}, true}, Case{"log_softmax_4d", {0, 1, 2, -1}, true}}) {
    auto f = fixture(std::string("loss_") + c.file);
    for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
      for (int64_t dim : c.dims) {
        const std::string key = dim < 0 ? "m" + std::to_string(-dim) : std::to_string(dim);
        const std::string what = std::string(c.file) + " dim " + std::to_string(dim) + suffix(dtype);
        Tensor x = leaf(f.at("x"), dtype);
        Tensor y = c.log ? F::log_softmax(x, dim) : F::softmax(x, dim);
        require_close(y, f.at("y_" + key), what + " forward", tolerance(dtype));
        y.backward(f.at("dy_" + key).to(dtype));
        require_close(x.grad(), f.at("dx_" + key), what + " gradient", tolerance(dtype));
      }
    }
  }
}

TEST_CASE("cross_entropy and nll_loss match PyTorch with weight, ignore_index, label_smoothing, per-pixel "
          "targets and every reduction") {
  const char* ce_cases[] = {"ce_plain", "ce_weight", "ce_ignore", "ce_ignore_default", "ce_smooth", "ce_all", "ce_pixel"};
  const char* nll_cases[] = {"nll_all", "nll_pixel"};
  auto run = [](const std::string& name, bool ce) {
    for (const char* reduction : {"none", "mean", "sum"}) {
      auto f = fixture("loss_" + name + "_" + reduction);
      Tensor config = f.at("config");
      auto at = [&](int64_t i) { return config.data<double>()[i]; };
      for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
        const std::string what = name + " " + reduction + suffix(dtype);
        Tensor x = leaf(f.at("input"), dtype);
        Tensor weight = at(3) != 0 ? f.at("weight").to(dtype) : Tensor();
        const auto ignore_index = static_cast<int64_t>(at(0));
        Tensor loss = ce ? F::cross_entropy(x, f.at("target"), {.weight = weight, .ignore_index = ignore_index,
                                                                .label_smoothing = at(1),
                                                                .reduction = reduction_of(at(2))})
                         : F::nll_loss(x, f.at("target"),
                                       {.weight = weight, .ignore_index = ignore_index, .reduction = reduction_of(at(2))});
        require_close(loss.dim() == 0 ? loss.reshape({1}) : loss, f.at("loss"), what + " loss", tolerance(dtype));
        loss.backward(f.at("upstream").to(dtype));
        require_close(x.grad(), f.at("dinput"), what + " gradient", tolerance(dtype));
      }
    }
  };
  for (const char* name : ce_cases) run(name, true);
  for (const char* name : nll_cases) run(name, false);
}

TEST_CASE("softmax and log_softmax gradients match finite differences over dims, odd sizes, batch 1 and "
          "non-contiguous inputs") {
  ember::manual_seed(170);
  struct Case {
    ember::Shape shape;
    int64_t dim;
    bool transposed;  // the input is a transposed (non-contiguous) view of the shape's transpose
  };
  for (const Case& c : std::vector<Case>{{{1, 5}, 1, false},
                                         {{3, 7}, 0, false},
                                         {{2, 3, 5}, 1, false},
                                         {{2, 3, 5}, -1, false},
                                         {{1, 4, 3, 3}, 1, false},
                                         {{3, 2, 1, 5}, 0, false},
                                         {{4, 5}, -1, true},
                                         {{3, 4, 5}, 1, true},
                                         {{7}, 0, false}}) {
    for (bool log : {false, true}) {
      Tensor x = ember::randn(c.shape);
      if (c.transposed) {
        ember::Shape swapped = c.shape;
        std::swap(swapped.front(), swapped.back());
        x = ember::randn(swapped);
      }
      const std::string what = std::string(log ? "log_softmax " : "softmax ") + ember::shape_str(c.shape) + " dim " +
                               std::to_string(c.dim) + (c.transposed ? " (transposed view)" : "");
      check_gradients(what, [&](const std::vector<Tensor>& in) {
        Tensor input = c.transposed ? in[0].transpose(0, static_cast<int64_t>(c.shape.size()) - 1) : in[0];
        if (c.transposed) REQUIRE_FALSE(input.is_contiguous());
        return log ? F::log_softmax(input, c.dim) : F::softmax(input, c.dim);
      }, {x});
    }
  }
}

TEST_CASE("cross_entropy and nll_loss gradients match finite differences with every option and reduction") {
  ember::manual_seed(171);
  struct Case {
    ember::Shape shape;
    bool weighted;
    int64_t ignore_index, every;
    double smoothing;
  };
  for (const Case& c : std::vector<Case>{{{1, 3}, false, -100, 0, 0.0},
                                         {{5, 4}, true, -100, 0, 0.0},
                                         {{6, 5}, false, 2, 3, 0.1},
                                         {{7, 3}, true, -1, 2, 0.3},
                                         {{2, 4, 3, 2}, true, 0, 4, 0.2},
                                         {{1, 3, 5}, false, -100, 0, 1.0}}) {
    const int64_t classes = c.shape[1];
    ember::Shape target_shape = c.shape;
    target_shape.erase(target_shape.begin() + 1);
    Tensor target = labels(target_shape, classes, c.ignore_index, c.every);
    Tensor weight = c.weighted ? ember::add(ember::rand({classes}, {.dtype = ember::kFloat64}), 0.5) : Tensor();
    for (F::Reduction r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None}) {
      const std::string what = ember::shape_str(c.shape) + (c.weighted ? " weighted" : "") + " ignore_index " +
                               std::to_string(c.ignore_index) + " smoothing " + std::to_string(c.smoothing) + " " +
                               reduction_name(r);
      check_gradients("cross_entropy " + what, [&](const std::vector<Tensor>& in) {
        return F::cross_entropy(in[0], target, {.weight = weight, .ignore_index = c.ignore_index,
                                               .label_smoothing = c.smoothing, .reduction = r});
      }, {ember::randn(c.shape)});
      check_gradients("nll_loss " + what, [&](const std::vector<Tensor>& in) {
        return F::nll_loss(F::log_softmax(in[0], 1), target, {.weight = weight, .ignore_index = c.ignore_index,
                                                             .reduction = r});
      }, {ember::randn(c.shape)});
    }
  }
  // A non-contiguous (transposed) logits view.
  Tensor target = labels({6}, 4);
  check_gradients("cross_entropy transposed logits", [&](const std::vector<Tensor>& in) {
    return F::cross_entropy(in[0].t(), target, {.label_smoothing = 0.1});
  }, {ember::randn({4, 6})});
}

TEST_CASE("cross_entropy: mean divides by the weights of the non-ignored targets; label smoothing's formula") {
  // Hand-computed: logits 0 everywhere over C = 4 classes (log_probs = -log 4), targets {1, ignore, 3}.
  Tensor logits = ember::zeros({3, 4}, {.dtype = ember::kFloat64});
  Tensor target = ember::tensor(std::vector<int64_t>{1, -5, 3});
  Tensor weight = ember::tensor(std::vector<double>{1.0, 2.0, 3.0, 4.0});
  const double l4 = std::log(4.0);
  Tensor loss = F::cross_entropy(logits, target, {.weight = weight, .ignore_index = -5});
  CHECK(loss.item<double>() == Approx((2.0 * l4 + 4.0 * l4) / 6.0).epsilon(1e-12));
  // Smoothing e: row loss = (1 - e) w_t l4 + e / C * sum_c w_c l4 = l4 ((1 - e) w_t + e * 10 / 4).
  Tensor smooth = F::cross_entropy(logits, target, {.weight = weight, .ignore_index = -5, .label_smoothing = 0.2,
                                                    .reduction = F::Reduction::None});
  CHECK(smooth.data<double>()[0] == Approx(l4 * (0.8 * 2.0 + 0.2 * 2.5)).epsilon(1e-12));
  CHECK(smooth.data<double>()[1] == 0.0);
  CHECK(smooth.data<double>()[2] == Approx(l4 * (0.8 * 4.0 + 0.2 * 2.5)).epsilon(1e-12));
}

TEST_CASE("softmax and loss layers call the functional ops with their options") {
  ember::manual_seed(172);
  Tensor x = ember::randn({2, 3, 4});
  CHECK(ember::allclose(ember::nn::Softmax(1).forward(x), F::softmax(x, 1), 0.0, 0.0));
  CHECK(ember::allclose(ember::nn::LogSoftmax(-1)(x), F::log_softmax(x, -1), 0.0, 0.0));
  Tensor logits = ember::randn({5, 3}), target = labels({5}, 3, 1, 2);
  Tensor weight = ember::tensor(std::vector<float>{0.5f, 1.0f, 2.0f});
  const F::CrossEntropyOptions options{.weight = weight, .ignore_index = 1, .label_smoothing = 0.1,
                                       .reduction = F::Reduction::Sum};
  ember::nn::CrossEntropyLoss ce(options);
  CHECK(ember::allclose(ce(logits, target), F::cross_entropy(logits, target, options), 0.0, 0.0));
  CHECK(ce.buffers().size() == 1);
  CHECK(ce.extra_repr() == "ignore_index=1, reduction=sum, label_smoothing=0.1");
  ember::nn::NLLLoss nll({.weight = weight, .ignore_index = 1});
  Tensor logp = F::log_softmax(logits, 1);
  CHECK(ember::allclose(nll(logp, target), F::nll_loss(logp, target, {.weight = weight, .ignore_index = 1}), 0.0, 0.0));
  CHECK_THROWS_WITH(ember::nn::CrossEntropyLoss({.label_smoothing = 1.5}),
                    Catch::Contains("CrossEntropyLoss: label_smoothing must be in [0, 1], got 1.5"));
  CHECK_THROWS_WITH(ce.forward(logits), Catch::Contains("forward not implemented for CrossEntropyLoss"));
}

TEST_CASE("softmax, nll_loss and cross_entropy reject bad arguments with messages naming what they got") {
  Tensor logits = ember::randn({4, 10});
  CHECK_THROWS_WITH(F::cross_entropy(logits, ember::tensor(std::vector<int64_t>{1, 2, 12, 3})),
                    "cross_entropy: target[2] = 12 is out of range for 10 classes (expected [0, 9])");
  // ignore_index is allowed, any other negative label is not.
  CHECK_NOTHROW(F::cross_entropy(logits, ember::tensor(std::vector<int64_t>{1, -100, 2, 3})));
  CHECK_THROWS_WITH(F::cross_entropy(logits, ember::tensor(std::vector<int64_t>{1, -100, 2, 3}), {.ignore_index = 2}),
                    Catch::Contains("cross_entropy: target[1] = -100 is out of range for 10 classes"));
  CHECK_THROWS_WITH(F::cross_entropy(logits, labels({4}, 10), {.weight = ember::ones({9})}),
                    Catch::Contains("cross_entropy: weight must be [10] (one per class), got [9]"));
  CHECK_THROWS_WITH(F::nll_loss(logits, labels({4}, 10), {.weight = ember::ones({10}, {.dtype = ember::kFloat64})}),
                    Catch::Contains("nll_loss: weight is float64 but input is float32"));
  CHECK_THROWS_WITH(F::cross_entropy(logits, labels({4}, 10), {.label_smoothing = -0.1}),
                    Catch::Contains("cross_entropy: label_smoothing must be in [0, 1], got -0.1"));
  CHECK_THROWS_WITH(F::cross_entropy(logits, labels({4}, 10), {.label_smoothing = 1.5}),
                    Catch::Contains("cross_entropy: label_smoothing must be in [0, 1], got 1.5"));
  CHECK_THROWS_WITH(F::cross_entropy(ember::randn({2, 3, 4}), labels({2, 3}, 3)),
                    Catch::Contains("cross_entropy: target must be [2, 4] to match input [2, 3, 4], got [2, 3]"));
  CHECK_THROWS_WITH(F::cross_entropy(ember::randn({5}), labels({5}, 3)),
                    Catch::Contains("cross_entropy: input must be [N, C] or [N, C, d1, ...], got [5]"));
  CHECK_THROWS_WITH(F::softmax(ember::randn({2, 3}), 2),
                    Catch::Contains("softmax: dim 2 is out of range for a 2-D input (expected [-2, 1])"));
  CHECK_THROWS_WITH(F::log_softmax(ember::randn({2, 3}), -3),
                    Catch::Contains("log_softmax: dim -3 is out of range for a 2-D input (expected [-2, 1])"));
  CHECK_THROWS_WITH(F::softmax(ember::zeros({3}, {.dtype = ember::kInt64}), 0),
                    Catch::Contains("softmax: input must be float32 or float64, got int64"));
}

// The composed element-wise losses: the fixture files hold input, target, the optional weight and
// pos_weight, the loss per reduction and the input's gradient.
TEST_CASE("l1, smooth_l1, huber, binary_cross_entropy (with logits) and kl_div match PyTorch") {
  using Loss = std::function<Tensor(const Tensor&, const Tensor&, const std::map<std::string, Tensor>&, F::Reduction)>;
  auto opt = [](const std::map<std::string, Tensor>& f, const char* key, ember::DType dtype) {
    return f.count(key) ? f.at(key).to(dtype) : Tensor();
  };
  const std::vector<std::pair<std::string, Loss>> cases{
      {"l1", [](const Tensor& x, const Tensor& t, const auto&, F::Reduction r) { return F::l1_loss(x, t, r); }},
      {"smooth_l1", [](const Tensor& x, const Tensor& t, const auto&, F::Reduction r) {
         return F::smooth_l1_loss(x, t, r, 0.7);
       }},
      {"huber", [](const Tensor& x, const Tensor& t, const auto&, F::Reduction r) { return F::huber_loss(x, t, r, 1.5); }},
      {"bce", [&](const Tensor& x, const Tensor& t, const auto& f, F::Reduction r) {
         return F::binary_cross_entropy(x, t, {.weight = opt(f, "weight", x.dtype()), .reduction = r});
       }},
      {"bce_logits", [&](const Tensor& x, const Tensor& t, const auto& f, F::Reduction r) {
         return F::binary_cross_entropy_with_logits(
             x, t, {.weight = opt(f, "weight", x.dtype()), .pos_weight = opt(f, "pos_weight", x.dtype()), .reduction = r});
       }},
      {"kl_div", [](const Tensor& x, const Tensor& t, const auto&, F::Reduction r) { return F::kl_div(x, t, r); }},
      {"kl_div_log_target", [](const Tensor& x, const Tensor& t, const auto&, F::Reduction r) {
         return F::kl_div(x, t, r, /*log_target=*/true);
       }}};
  for (const auto& [name, loss_fn] : cases) {
    for (F::Reduction r : {F::Reduction::None, F::Reduction::Mean, F::Reduction::Sum}) {
      auto f = fixture("loss_" + name + "_" + reduction_name(r));
      for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
        const std::string what = name + " " + reduction_name(r) + suffix(dtype);
        Tensor x = leaf(f.at("input"), dtype);
        Tensor loss = loss_fn(x, f.at("target").to(dtype), f, r);
        require_close(loss.dim() == 0 ? loss.reshape({1}) : loss, f.at("loss"), what + " loss", tolerance(dtype));
        loss.backward(f.at("upstream").to(dtype));
        require_close(x.grad(), f.at("dinput"), what + " gradient", tolerance(dtype));
      }
    }
  }
}

TEST_CASE("kl_div with reduction BatchMean matches PyTorch's batchmean; the other losses refuse it") {
  for (const char* name : {"kl_div", "kl_div_log_target"}) {
    auto f = fixture(std::string("loss_") + name + "_batchmean");
    const bool log_target = std::string(name) == "kl_div_log_target";
    for (ember::DType dtype : {ember::kFloat32, ember::kFloat64}) {
      const std::string what = std::string(name) + " batchmean" + suffix(dtype);
      Tensor x = leaf(f.at("input"), dtype);
      Tensor loss = F::kl_div(x, f.at("target").to(dtype), F::Reduction::BatchMean, log_target);
      require_close(loss.reshape({1}), f.at("loss"), what + " loss", tolerance(dtype));
      loss.backward(f.at("upstream").to(dtype));
      require_close(x.grad(), f.at("dinput"), what + " gradient", tolerance(dtype));
    }
  }
  const Tensor probs = ember::add(ember::mul(ember::rand({3, 5}, {.dtype = ember::kFloat64}), 0.8), 0.1);
  check_gradients("kl_div batchmean", [&](const std::vector<Tensor>& in) {
    return F::kl_div(in[0], in[1], F::Reduction::BatchMean);
  }, {ember::randn({3, 5}, {.dtype = ember::kFloat64}), probs});
  Tensor x = ember::randn({4, 3});
  const auto refused = Catch::Contains("reduction BatchMean (\"batchmean\") is only for kl_div");
  CHECK_THROWS_WITH(F::l1_loss(x, x, F::Reduction::BatchMean), refused);
  CHECK_THROWS_WITH(F::mse_loss(x, x, F::Reduction::BatchMean), Catch::Contains("mse_loss: reduction BatchMean"));
  CHECK_THROWS_WITH(F::cross_entropy(x, labels({4}, 3), F::Reduction::BatchMean),
                    Catch::Contains("cross_entropy: reduction BatchMean"));
  CHECK_THROWS_WITH(F::nll_loss(x, labels({4}, 3), F::Reduction::BatchMean), Catch::Contains("nll_loss: reduction BatchMean"));
  CHECK_THROWS_WITH(F::binary_cross_entropy(ember::rand({4, 3}), x, {.reduction = F::Reduction::BatchMean}), refused);
}

TEST_CASE("the composed element-wise losses' gradients match finite differences, input and target") {
  ember::manual_seed(173);
  // Away from the kinks (|x - t| = beta or delta, x = t), where the losses are not differentiable.
  Tensor x = ember::randn({3, 5}, {.dtype = ember::kFloat64}), t = ember::add(x, ember::full({3, 5}, 0.3, {.dtype = ember::kFloat64}));
  t = ember::add(t, ember::mul(ember::arange(0.0, 15.0, 1.0, {.dtype = ember::kFloat64}).reshape({3, 5}), 0.17));
  const Tensor probs = ember::add(ember::mul(ember::rand({3, 5}, {.dtype = ember::kFloat64}), 0.8), 0.1);
  const Tensor w = ember::add(ember::rand({5}, {.dtype = ember::kFloat64}), 0.5);
  for (F::Reduction r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None}) {
    const std::string rn = reduction_name(r);
    check_gradients("l1_loss " + rn, [&](const std::vector<Tensor>& in) { return F::l1_loss(in[0], in[1], r); }, {x, t});
    check_gradients("smooth_l1_loss " + rn, [&](const std::vector<Tensor>& in) {
      return F::smooth_l1_loss(in[0], in[1], r, 1.05);
    }, {x, t});
    check_gradients("huber_loss " + rn, [&](const std::vector<Tensor>& in) { return F::huber_loss(in[0], in[1], r, 0.95); },
                    {x, t});
    check_gradients("binary_cross_entropy " + rn, [&](const std::vector<Tensor>& in) {
      return F::binary_cross_entropy(in[0], in[1], {.weight = w, .reduction = r});
    }, {probs, ember::rand({3, 5}, {.dtype = ember::kFloat64})});
    check_gradients("binary_cross_entropy_with_logits " + rn, [&](const std::vector<Tensor>& in) {
      return F::binary_cross_entropy_with_logits(in[0], in[1], {.weight = w, .pos_weight = ember::mul(w, 2.0), .reduction = r});
    }, {ember::mul(x, 3.0), ember::rand({3, 5}, {.dtype = ember::kFloat64})});
    check_gradients("kl_div " + rn, [&](const std::vector<Tensor>& in) { return F::kl_div(in[0], in[1], r); },
                    {x, probs});
    check_gradients("kl_div log_target " + rn, [&](const std::vector<Tensor>& in) {
      return F::kl_div(in[0], in[1], r, true);
    }, {x, ember::log(probs)});
  }
}

TEST_CASE("the composed element-wise losses reject bad arguments with messages naming what they got") {
  Tensor x = ember::randn({2, 3});
  CHECK_THROWS_WITH(F::l1_loss(x, ember::randn({3, 2})),
                    Catch::Contains("l1_loss: input [2, 3] and target [3, 2] must have the same shape"));
  CHECK_THROWS_WITH(F::smooth_l1_loss(x, x, F::Reduction::Mean, -1.0),
                    Catch::Contains("smooth_l1_loss: beta must be >= 0, got -1"));
  CHECK_THROWS_WITH(F::huber_loss(x, x, F::Reduction::Mean, 0.0), Catch::Contains("huber_loss: delta must be > 0, got 0"));
  CHECK_THROWS_WITH(F::binary_cross_entropy_with_logits(x, x, {.pos_weight = ember::ones({3}, {.dtype = ember::kFloat64})}),
                    Catch::Contains("binary_cross_entropy_with_logits: pos_weight is float64 but input is float32"));
  CHECK_THROWS_WITH(F::kl_div(x, ember::randn({2, 3}, {.dtype = ember::kFloat64})),
                    Catch::Contains("kl_div: target is float64 but input is float32"));
  CHECK(F::smooth_l1_loss(x, ember::zeros({2, 3}), F::Reduction::Sum, 0.0).item<float>() ==
        Approx(F::l1_loss(x, ember::zeros({2, 3}), F::Reduction::Sum).item<float>()));
}
