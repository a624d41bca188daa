// CPU-vs-CUDA parity of sigmoid, tanh, gelu (both forms), silu, leaky_relu, elu, hardswish and the
// tensor ops erf / tanh / sigmoid: forward and input gradient, float32 and float64, at odd,
// batch-1, non-contiguous and misaligned (no float4) inputs.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using ember::Shape;
using ember::Tensor;
using parity::dtype_suffix;
using parity::tolerance_for;
namespace F = ember::nn::functional;

namespace {

struct Activation {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
};

const std::vector<Activation>& activations() {
  static const std::vector<Activation> all{
      {"sigmoid", [](const Tensor& t) { return F::sigmoid(t); }},
      {"tanh", [](const Tensor& t) { return F::tanh(t); }},
      {"gelu", [](const Tensor& t) { return F::gelu(t); }},
      {"gelu tanh", [](const Tensor& t) { return F::gelu(t, {.approximate = "tanh"}); }},
      {"silu", [](const Tensor& t) { return F::silu(t); }},
      {"leaky_relu 0.1", [](const Tensor& t) { return F::leaky_relu(t, 0.1); }},
      {"elu 0.7", [](const Tensor& t) { return F::elu(t, 0.7); }},
      {"hardswish", [](const Tensor& t) { return F::hardswish(t); }},
      {"ember::erf", [](const Tensor& t) { return ember::erf(t); }},
      {"ember::tanh", [](const Tensor& t) { return ember::tanh(t); }},
      {"ember::sigmoid", [](const Tensor& t) { return ember::sigmoid(t); }}};
  return all;
}

// random_input scaled to [-4, 4]-ish, so that hardswish's and the saturating ops' ranges are hit.
Tensor wide_input(const Shape& shape, ember::DType dtype) {
  return ember::mul(parity::random_input(shape, dtype), 4.0);
}

}  // namespace

TEST_CASE("activations match the CPU on CUDA, forward and backward, odd and non-contiguous shapes") {
  const std::vector<Shape> shapes{{1}, {7}, {1, 3, 5}, {4099}, {8, 16, 14, 14}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Activation& a : activations()) {
      const auto op = a.op;
      for (const Shape& shape : shapes) {
        parity::check_parity({.name = a.name + " " + ember::shape_str(shape) + dtype_suffix(dtype),
                              .make_inputs = [=] { return std::vector<Tensor>{wide_input(shape, dtype)}; },
                              .op = [op](const std::vector<Tensor>& in) { return op(in[0]); },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
      }
      parity::check_parity({.name = a.name + " transposed [33,17]" + dtype_suffix(dtype),
                            .make_inputs = [=] { return std::vector<Tensor>{wide_input({33, 17}, dtype)}; },
                            .op = [op](const std::vector<Tensor>& in) { return op(in[0].t()); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype)});
      parity::check_parity({.name = a.name + " unaligned [1001]" + dtype_suffix(dtype),
                            .make_inputs = [=] { return std::vector<Tensor>{wide_input({1002}, dtype)}; },
                            .op = [op](const std::vector<Tensor>& in) { return op(in[0].narrow(0, 1, 1001)); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype)});
    }
  }
}
