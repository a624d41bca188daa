// Tensors on a GPU: allocation, copies to and from the CPU, strided copies, casts, fill.
#include <catch2/catch.hpp>

#include "core/generator.h"
#include "core/ops.h"
#include "core/tensor.h"

using ember::Tensor;

TEST_CASE("a tensor round-trips CPU -> CUDA -> CPU unchanged, strided and cast") {
  Tensor x = ember::randn({33, 17});
  Tensor on_gpu = x.to(ember::Device::cuda(0));
  CHECK(on_gpu.device() == ember::Device::cuda(0));
  CHECK(ember::allclose(on_gpu.cpu(), x, 0, 0));
  CHECK(ember::allclose(on_gpu.transpose(0, 1).contiguous().cpu(), x.t().contiguous(), 0, 0));
  CHECK(ember::allclose(x.t().to(ember::Device::cuda(0)).cpu(), x.t(), 0, 0));
  CHECK(ember::allclose(on_gpu.to(ember::kFloat64).cpu(), x.to(ember::kFloat64), 0, 0));
  Tensor filled = ember::full({5, 3}, 2.5, {.device = ember::Device::cuda(0)});
  CHECK(ember::allclose(filled.cpu(), ember::full({5, 3}, 2.5), 0, 0));
  CHECK(on_gpu.at<float>({2, 5}) == x.at<float>({2, 5}));
  CHECK_THAT(on_gpu.str(), Catch::Contains("device='cuda:0'"));
}

TEST_CASE("the same seed draws the same numbers for CPU and CUDA tensors") {
  ember::manual_seed(7);
  Tensor cpu = ember::randn({100});
  ember::manual_seed(7);
  Tensor gpu = ember::randn({100}, {.device = ember::Device::cuda(0)});
  CHECK(ember::allclose(gpu.cpu(), cpu, 0, 0));
}

TEST_CASE("an op mixing devices names both devices") {
  Tensor a = ember::ones({2}), b = ember::ones({2}, {.device = ember::Device::cuda(0)});
  REQUIRE_THROWS_WITH(ember::add(a, b), Catch::Contains("expected all tensors on the same device, got cpu and cuda:0"));
}

TEST_CASE("pin_memory copies a CPU tensor into page-locked memory that moves to the GPU unchanged") {
  Tensor x = ember::randn({8, 8});
  Tensor pinned = x.pin_memory();
  CHECK(pinned.is_pinned());
  CHECK_FALSE(x.is_pinned());
  CHECK(ember::allclose(pinned.cuda().cpu(), x, 0, 0));
}
