// CPU-vs-CUDA parity of softmax and log_softmax over any dim (the contiguous-row and strided
// paths), and of cross_entropy and nll_loss with class weights, ignore_index, label smoothing and
// per-pixel targets, for every reduction, and of the composed element-wise losses: forward and
// input gradients, float32 and float64.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

namespace {

// Labels in [0, classes) of the given shape, a fixed pseudo-random sequence; every `every`-th (if
// any) set to ignore_index.
Tensor labels(const Shape& shape, int64_t classes, int64_t ignore_index = -100, int64_t every = 0) {
  Tensor t = ember::empty(shape, {.dtype = ember::kInt64});
  uint64_t state = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(t.numel() * 131 + classes);
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t.data<int64_t>()[i] = (every > 0 && i % every == every - 1)
                               ? ignore_index
                               : static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(classes));
  }
  return t;
}

const char* reduction_name(F::Reduction r) {
  return r == F::Reduction::None ? "none" : r == F::Reduction::Mean ? "mean" : "sum";
}

}  // namespace

TEST_CASE("softmax and log_softmax match the CPU on CUDA over every dim: warp, block and strided rows") {
  struct Case {
    Shape shape;
    int64_t dim;
  };
  const std::vector<Case> cases{{{64, 10}, 1},      {{3, 1030}, -1},   {{4, 5, 6}, 0},  {{4, 5, 6}, 1},
                                {{4, 5, 6}, 2},     {{2, 7, 3, 5}, 1}, {{1, 9}, 0},     {{7}, 0},
                                {{2, 1100, 3}, 1}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Case& c : cases) {
      for (bool log : {false, true}) {
        const int64_t dim = c.dim;
        parity::check_parity({.name = std::string(log ? "log_softmax " : "softmax ") + ember::shape_str(c.shape) +
                                      " dim " + std::to_string(dim) + dtype_suffix(dtype),
                              .make_inputs = [=] { return std::vector<Tensor>{random_input(c.shape, dtype)}; },
                              .op = [=](const std::vector<Tensor>& in) {
                                return log ? F::log_softmax(in[0], dim) : F::softmax(in[0], dim);
                              },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
      }
    }
    parity::check_parity({.name = "softmax transposed [6,9] dim 0" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({9, 6}, dtype)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::softmax(in[0].t(), 0); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
  }
}

TEST_CASE("cross_entropy and nll_loss with weight, ignore_index and label smoothing match the CPU on CUDA") {
  struct Case {
    Shape shape;
    bool weighted;
    int64_t ignore_index, every;
    double smoothing;
  };
  const std::vector<Case> cases{{{64, 10}, true, -100, 0, 0.0},   {{16, 7}, false, 3, 4, 0.1},
                                {{9, 1030}, true, -1, 3, 0.2},    {{2, 5, 3, 4}, true, 1, 5, 0.1},
                                {{1, 3, 7}, false, -100, 2, 0.0}, {{300, 5}, true, 0, 7, 0.25}};
  const F::Reduction reductions[] = {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Case& c : cases) {
      Shape target_shape = c.shape;
      target_shape.erase(target_shape.begin() + 1);
      const int64_t classes = c.shape[1];
      for (F::Reduction r : reductions) {
        const std::string suffix = " " + ember::shape_str(c.shape) + (c.weighted ? " weighted" : "") + " ignore " +
                                   std::to_string(c.ignore_index) + " smoothing " + std::to_string(c.smoothing) +
                                   " " + reduction_name(r) + dtype_suffix(dtype);
        auto make = [=] {
          Tensor weight = c.weighted ? ember::add(ember::rand({classes}, {.dtype = dtype}), 0.5)
                                     : ember::ones({classes}, {.dtype = dtype});
          return std::vector<Tensor>{random_input(c.shape, dtype), labels(target_shape, classes, c.ignore_index, c.every),
                                     weight};
        };
        const bool weighted = c.weighted;
        const int64_t ignore_index = c.ignore_index;
        const double smoothing = c.smoothing;
        parity::check_parity({.name = "cross_entropy" + suffix,
                              .make_inputs = make,
                              .op = [=](const std::vector<Tensor>& in) {
                                return F::cross_entropy(in[0], in[1],
                                                        {.weight = weighted ? in[2] : Tensor(),
                                                         .ignore_index = ignore_index,
                                                         .label_smoothing = smoothing,
                                                         .reduction = r});
                              },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
        parity::check_parity({.name = "nll_loss" + suffix,
                              .make_inputs = make,
                              .op = [=](const std::vector<Tensor>& in) {
                                return F::nll_loss(in[0], in[1],
                                                   {.weight = weighted ? in[2] : Tensor(),
                                                    .ignore_index = ignore_index,
                                                    .reduction = r});
                              },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
      }
    }
  }
}

TEST_CASE("a per-pixel target out of range gives the CPU's error on CUDA, ignore_index passes") {
  Tensor logits = random_input({2, 3, 2, 2}).cuda();
  Tensor target = ember::tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 7, 0, 0}).reshape({2, 2, 2}).cuda();
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, target),
                      "cross_entropy: target[5] = 7 is out of range for 3 classes (expected [0, 2])");
  CHECK_NOTHROW(F::cross_entropy(logits, target, {.ignore_index = 7}));
  REQUIRE_THROWS_WITH(F::nll_loss(logits, target, {.ignore_index = 0}),
                      "nll_loss: target[5] = 7 is out of range for 3 classes (expected [0, 2])");
}

TEST_CASE("the composed element-wise losses match the CPU on CUDA, input and target gradients") {
  using Loss = std::function<Tensor(const std::vector<Tensor>&, F::Reduction)>;
  const std::vector<std::pair<std::string, Loss>> losses{
      {"l1_loss", [](const std::vector<Tensor>& in, F::Reduction r) { return F::l1_loss(in[0], in[1], r); }},
      {"smooth_l1_loss", [](const std::vector<Tensor>& in, F::Reduction r) { return F::smooth_l1_loss(in[0], in[1], r, 0.5); }},
      {"huber_loss", [](const std::vector<Tensor>& in, F::Reduction r) { return F::huber_loss(in[0], in[1], r, 0.8); }},
      {"binary_cross_entropy_with_logits", [](const std::vector<Tensor>& in, F::Reduction r) {
         return F::binary_cross_entropy_with_logits(in[0], in[1],
                                                    {.weight = in[2], .pos_weight = in[2], .reduction = r});
       }},
      {"kl_div log_target", [](const std::vector<Tensor>& in, F::Reduction r) { return F::kl_div(in[0], in[1], r, true); }}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const auto& [name, loss] : losses) {
      for (F::Reduction r : {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None}) {
        const Loss fn = loss;
        parity::check_parity({.name = name + " " + reduction_name(r) + dtype_suffix(dtype),
                              .make_inputs = [=] {
                                return std::vector<Tensor>{random_input({6, 5}, dtype), random_input({6, 5}, dtype),
                                                           ember::add(ember::rand({5}, {.dtype = dtype}), 0.5)};
                              },
                              .op = [=](const std::vector<Tensor>& in) { return fn(in, r); },
                              .differentiable = {0, 1},
                              .tolerance = tolerance_for(dtype)});
      }
    }
  }
}
