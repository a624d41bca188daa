// cat, stack, split and chunk against PyTorch's values and gradients (tests/gen_shape_fixtures.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"

using ember::Tensor;

namespace {

using Op = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs `op` on the fixture's inputs x0, x1, ...; compares every output y_i and, after backward
// of sum(y_i * dy_i), every input gradient dx_i (same dtype as PyTorch's, values to 1e-6 relative:
// the ops only move data, so float32 agrees exactly).
void check_fixture(const std::string& name, const Op& op) {
  auto f = ember::nn::read_safetensors(std::string(EMBER_FIXTURE_DIR) + "/shape_" + name + ".safetensors");
  std::vector<Tensor> xs;
  for (int i = 0; f.count("x" + std::to_string(i)); ++i) xs.push_back(f.at("x" + std::to_string(i)).clone().requires_grad_());
  std::vector<Tensor> ys = op(xs);
  std::vector<Tensor> roots, grads;
  for (size_t i = 0; i < ys.size(); ++i) {
    const std::string key = std::to_string(i);
    INFO(name << ": output " << i);
    REQUIRE(f.count("y" + key));
    CHECK(ys[i].dtype() == f.at("y" + key).dtype());
    CHECK(ember::allclose(ys[i], f.at("y" + key), 1e-6, 0));
    roots.push_back(ys[i]);
    grads.push_back(f.at("dy" + key));
  }
  CHECK_FALSE(f.count("y" + std::to_string(ys.size())));  // as many outputs as PyTorch
  ember::autograd::backward(roots, grads);
  for (size_t i = 0; i < xs.size(); ++i) {
    INFO(name << ": gradient of input " << i);
    Tensor expected = f.at("dx" + std::to_string(i));
    REQUIRE(xs[i].grad().defined());
    CHECK(xs[i].grad().dtype() == expected.dtype());
    CHECK(ember::allclose(xs[i].grad(), expected, 1e-6, 0));
  }
}

}  // namespace

TEST_CASE("cat matches PyTorch: channels, a negative dim and float32 + float64 promotion") {
  check_fixture("cat_dim1", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{ember::cat(x, 1)}; });
  check_fixture("cat_neg", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{ember::cat(x, -1)}; });
  check_fixture("cat_promote", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{ember::cat(x, 0)}; });
}

TEST_CASE("stack matches PyTorch") {
  check_fixture("stack_dim1", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{ember::stack(x, 1)}; });
  check_fixture("stack_neg", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{ember::stack(x, -1)}; });
}

TEST_CASE("split and chunk match PyTorch's pieces and gradients") {
  check_fixture("split_sizes", [](const std::vector<Tensor>& x) { return ember::split(x[0], std::vector<int64_t>{2, 4, 1}, 0); });
  check_fixture("split_size", [](const std::vector<Tensor>& x) { return ember::split(x[0], 3, 1); });
  check_fixture("chunk", [](const std::vector<Tensor>& x) { return ember::chunk(x[0], 4, -1); });
}
