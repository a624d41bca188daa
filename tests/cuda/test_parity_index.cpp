// CPU-vs-CUDA parity of index_select, gather, embedding (with padding_idx) and one_hot:
// repeated indices (their gradients summed), first, middle and last dims, a transposed input.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

namespace {

// Random int64 indices in [0, size) of the given shape (on the CPU, as make_inputs builds them).
Tensor random_indices(const Shape& shape, int64_t size) {
  return ember::clamp(ember::mul(ember::rand(shape), static_cast<double>(size)).to(ember::kInt64), 0.0,
                      static_cast<double>(size - 1));
}

}  // namespace

TEST_CASE("index_select, gather and embedding match the CPU on CUDA, forward and backward") {
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (int64_t dim : {0, 1, -1}) {
      parity::check_parity({.name = "index_select dim " + std::to_string(dim) + " [6,5,4]" + dtype_suffix(dtype),
                            .make_inputs = [=] {
                              return std::vector<Tensor>{random_input({6, 5, 4}, dtype), random_indices({9}, 4)};
                            },
                            .op = [=](const std::vector<Tensor>& in) { return ember::index_select(in[0], dim, in[1]); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype)});
    }
    parity::check_parity({.name = "gather dim 1 [16,10] one class per row" + dtype_suffix(dtype),
                          .make_inputs = [=] {
                            return std::vector<Tensor>{random_input({16, 10}, dtype), random_indices({16, 1}, 10)};
                          },
                          .op = [](const std::vector<Tensor>& in) { return ember::gather(in[0], 1, in[1]); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
    parity::check_parity({.name = "gather dim 0 of a transposed [7,5]" + dtype_suffix(dtype),
                          .make_inputs = [=] {
                            return std::vector<Tensor>{random_input({7, 5}, dtype), random_indices({8, 6}, 5)};
                          },
                          .op = [](const std::vector<Tensor>& in) { return ember::gather(in[0].t(), 0, in[1]); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
    for (bool padding : {false, true}) {
      parity::check_parity({.name = std::string("embedding [20,8]") + (padding ? " padding_idx 3" : "") +
                                    dtype_suffix(dtype),
                            .make_inputs = [=] {
                              return std::vector<Tensor>{random_input({20, 8}, dtype), random_indices({4, 9}, 20)};
                            },
                            .op = [=](const std::vector<Tensor>& in) {
                              return padding ? F::embedding(in[1], in[0], 3) : F::embedding(in[1], in[0]);
                            },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype)});
    }
  }
}

TEST_CASE("one_hot and an out-of-range index behave alike on the CPU and on CUDA") {
  const ember::Device gpu = ember::Device::cuda(0);
  Tensor classes = random_indices({5, 3}, 6);
  Tensor on_cpu = ember::one_hot(classes, 6), on_cuda = ember::one_hot(classes.to(gpu), 6);
  CHECK(on_cuda.device() == gpu);
  CHECK(ember::allclose(on_cuda.cpu(), on_cpu, 0.0, 0.0));
  CHECK(ember::allclose(ember::one_hot(classes.to(gpu)).cpu(), ember::one_hot(classes), 0.0, 0.0));
  Tensor x = ember::randn({3, 4}).to(gpu);
  Tensor bad = ember::tensor<int64_t>({0, 7}).to(gpu);
  CHECK_THROWS_WITH(ember::index_select(x, 1, bad),
                    Catch::Matchers::Contains("index_select: index 7 is out of range for dim 1 of size 4"));
  CHECK_THROWS_WITH(ember::index_select(x, 0, ember::tensor<int64_t>({0})),
                    Catch::Matchers::Contains("index_select: input is on cuda:0 but index is on cpu"));
}
