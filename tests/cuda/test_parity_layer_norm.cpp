// CPU-vs-CUDA parity of layer_norm: over the last one or two dims, with and without weight and
// bias, rows shorter and longer than a warp, a non-contiguous input; forward and the gradients
// of input, weight and bias.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

TEST_CASE("layer_norm matches the CPU on CUDA, forward and backward") {
  struct Case {
    Shape input, normalized;
  };
  const std::vector<Case> cases{{{8, 16}, {16}}, {{4, 9, 96}, {96}}, {{3, 6, 5, 7}, {5, 7}}, {{1, 300}, {300}},
                                {{70, 3}, {3}}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Case& c : cases) {
      for (bool affine : {true, false}) {
        const std::string name = std::string("layer_norm ") + (affine ? "" : "no weight/bias ") +
                                 ember::shape_str(c.input) + " over " + ember::shape_str(c.normalized) +
                                 dtype_suffix(dtype);
        parity::check_parity({.name = name,
                              .make_inputs = [=] {
                                return std::vector<Tensor>{ember::add(random_input(c.input, dtype), 0.5),
                                                           random_input(c.normalized, dtype),
                                                           random_input(c.normalized, dtype)};
                              },
                              .op = [=](const std::vector<Tensor>& in) {
                                return F::layer_norm(in[0], c.normalized, affine ? in[1] : Tensor(),
                                                     affine ? in[2] : Tensor());
                              },
                              .differentiable = affine ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0},
                              .tolerance = tolerance_for(dtype)});
      }
    }
    parity::check_parity({.name = "layer_norm transposed [6,40]" + dtype_suffix(dtype),
                          .make_inputs = [=] {
                            return std::vector<Tensor>{random_input({40, 6}, dtype), random_input({40}, dtype),
                                                       random_input({40}, dtype)};
                          },
                          .op = [](const std::vector<Tensor>& in) {
                            return F::layer_norm(in[0].t(), {40}, in[1], in[2]);
                          },
                          .differentiable = {0, 1, 2},
                          .tolerance = tolerance_for(dtype)});
  }
}
