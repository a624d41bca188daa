// CPU-vs-CUDA parity of batch_norm: training (batch statistics, running statistics updated on
// both devices alike) and evaluation, [N, C], [N, C, L] and [N, C, H, W], with and without
// weight and bias, a non-contiguous input; forward and the gradients of input, weight and bias.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "ember/nn/normalization.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

TEST_CASE("batch_norm matches the CPU on CUDA, training and evaluation, forward and backward") {
  const std::vector<Shape> shapes{{8, 16}, {4, 8, 7}, {4, 16, 5, 6}, {1, 3, 7, 9}, {2, 70, 3, 3}, {32, 4, 2, 2}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Shape& shape : shapes) {
      const int64_t c = shape[1];
      for (bool training : {true, false}) {
        for (bool affine : {true, false}) {
          const std::string name = std::string("batch_norm ") + (training ? "training " : "eval ") +
                                   (affine ? "" : "no weight/bias ") + ember::shape_str(shape) + dtype_suffix(dtype);
          parity::check_parity({.name = name,
                                .make_inputs = [=] {
                                  return std::vector<Tensor>{
                                      ember::add(random_input(shape, dtype), 0.5), random_input({c}, dtype),
                                      random_input({c}, dtype), random_input({c}, dtype),
                                      ember::add(ember::rand({c}, {.dtype = dtype}), 0.5)};
                                },
                                .op = [=](const std::vector<Tensor>& in) {
                                  // Fresh running statistics each call: the op updates them.
                                  Tensor rm = in[3].clone(), rv = in[4].clone();
                                  return F::batch_norm(in[0], rm, rv, affine ? in[1] : Tensor(),
                                                       affine ? in[2] : Tensor(), training, 0.1, 1e-5);
                                },
                                .differentiable = affine ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0},
                                .tolerance = tolerance_for(dtype)});
        }
      }
    }
    parity::check_parity({.name = "batch_norm training transposed [6,4,5,3]" + dtype_suffix(dtype),
                          .make_inputs = [=] {
                            return std::vector<Tensor>{random_input({6, 4, 5, 3}, dtype), random_input({5}, dtype),
                                                       random_input({5}, dtype)};
                          },
                          .op = [](const std::vector<Tensor>& in) {
                            return F::batch_norm(in[0].transpose(1, 2), Tensor(), Tensor(), in[1], in[2], true);
                          },
                          .differentiable = {0, 1, 2},
                          .tolerance = tolerance_for(dtype)});
  }
}

TEST_CASE("BatchNorm2d's running statistics move alike on the CPU and on CUDA") {
  ember::manual_seed(5);
  ember::nn::BatchNorm2d on_cpu(6), on_cuda(6, {.momentum = std::nullopt}), cumulative_cpu(6, {.momentum = std::nullopt});
  on_cuda.to(ember::Device::cuda(0));
  ember::nn::BatchNorm2d momentum_cuda(6);
  momentum_cuda.to(ember::Device::cuda(0));
  for (int step = 0; step < 3; ++step) {
    Tensor x = ember::add(ember::randn({4, 6, 3, 5}), double(step));
    on_cpu(x);
    momentum_cuda(x.to(ember::Device::cuda(0)));
    cumulative_cpu(x);
    on_cuda(x.to(ember::Device::cuda(0)));
  }
  CHECK(momentum_cuda.num_batches_tracked.is_cuda());
  CHECK(momentum_cuda.num_batches_tracked.cpu().item<int64_t>() == 3);
  CHECK(parity::relative_error(momentum_cuda.running_mean, on_cpu.running_mean) < 1e-5);
  CHECK(parity::relative_error(momentum_cuda.running_var, on_cpu.running_var) < 1e-5);
  CHECK(parity::relative_error(on_cuda.running_mean, cumulative_cpu.running_mean) < 1e-5);
  CHECK(parity::relative_error(on_cuda.running_var, cumulative_cpu.running_var) < 1e-5);
  on_cpu.eval();
  momentum_cuda.eval();
  Tensor x = ember::randn({2, 6, 4, 4});
  CHECK(parity::relative_error(momentum_cuda(x.to(ember::Device::cuda(0))), on_cpu(x)) < 1e-5);
}
