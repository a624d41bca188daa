// Tensors on a GPU: allocation, copies to and from the CPU, strided copies, casts, fill, and the
// core ops' CUDA behaviour that a parity row cannot show (NaN and tie rules, determinism, exact
// rounding, errors, devices other than cuda:0).
#include <catch2/catch.hpp>

#include <cmath>

#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

using ember::Shape;
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

// --- Core ops on CUDA tensors beyond the parity table -----------------------------------------

namespace {
const ember::Device kGpu = ember::Device::cuda(0);
}  // namespace

TEST_CASE("full and fill_ write every dtype on CUDA as on the CPU, contiguous or strided") {
  for (ember::DType d : {ember::kFloat32, ember::kFloat64, ember::kInt64, ember::kUInt8, ember::kBool}) {
    INFO(ember::dtype_name(d));
    for (double value : {0.0, 0.5, 3.0, -1.0}) {
      if (d == ember::kUInt8 && value < 0) continue;  // out of range: undefined in C++
      INFO("value " << value);
      Tensor cpu = ember::full({4097}, value, {.dtype = d});
      Tensor gpu = ember::full({4097}, value, {.dtype = d, .device = kGpu});
      CHECK(ember::allclose(gpu.cpu().to(ember::kFloat64), cpu.to(ember::kFloat64), 0, 0));
      Tensor cpu_view = ember::zeros({7, 9}, {.dtype = d});
      Tensor gpu_view = ember::zeros({7, 9}, {.dtype = d, .device = kGpu});
      cpu_view.t().narrow(0, 1, 3).fill_(value);
      gpu_view.t().narrow(0, 1, 3).fill_(value);
      CHECK(ember::allclose(gpu_view.cpu().to(ember::kFloat64), cpu_view.to(ember::kFloat64), 0, 0));
    }
  }
}

TEST_CASE("element-wise add and mul on CUDA round as the CPU does, bit for bit") {
  Tensor a = ember::randn({4097}), b = ember::randn({4097});
  Tensor ga = a.cuda(), gb = b.cuda();
  CHECK(ember::allclose(ember::add(ga, gb, 0.3).cpu(), ember::add(a, b, 0.3), 0, 0));
  CHECK(ember::allclose(ember::mul(ga, gb).cpu(), ember::mul(a, b), 0, 0));
  CHECK(ember::allclose(ember::div(ga, gb).cpu(), ember::div(a, b), 0, 0));
  CHECK(ember::allclose(ember::sqrt(ember::abs(ga)).cpu(), ember::sqrt(ember::abs(a)), 0, 0));
}

TEST_CASE("max, min, argmax and argmin on CUDA pick the first NaN, else the first of equal values") {
  const double nan = std::nan("");
  Tensor x = ember::tensor({1.0, 5.0, 5.0, nan, 2.0, nan, 7.0}).reshape({1, 7});
  for (Tensor t : {x, x.cuda()}) {
    INFO(t.device());
    auto [values, indices] = ember::max(t, 1);
    CHECK(std::isnan(values.item<double>()));
    CHECK(indices.item<int64_t>() == 3);
    CHECK(ember::argmin(t, 1).item<int64_t>() == 3);
    CHECK(std::isnan(ember::max(t).item<double>()));
    Tensor ties = ember::tensor({1.0, 5.0, 5.0, -2.0, -2.0}).to(t.device());
    CHECK(ember::argmax(ties, 0).item<int64_t>() == 1);
    CHECK(ember::argmin(ties, 0).item<int64_t>() == 3);
    CHECK(std::isnan(ember::maximum(t, ember::zeros({}, {.dtype = ember::kFloat64, .device = t.device()})).cpu().at<double>({0, 5})));
    CHECK(std::isnan(ember::minimum(ember::zeros({}, {.dtype = ember::kFloat64, .device = t.device()}), t).cpu().at<double>({0, 3})));
  }
  // The NaN is found wherever it sits in a long row (the split two-pass reduction).
  Tensor long_row = ember::randn({1, 300000}, {.dtype = ember::kFloat64});
  long_row.select(1, 123457).fill_(nan);
  long_row.select(1, 200001).fill_(nan);
  CHECK(ember::argmax(long_row.cuda(), 1).item<int64_t>() == 123457);
  CHECK(ember::argmin(long_row.cuda().t(), 0).item<int64_t>() == 123457);
}

TEST_CASE("CUDA reductions are deterministic: the same input sums to the same bits") {
  Tensor x = ember::randn({1 << 20}, {.device = kGpu});
  Tensor first = x.sum(), second = x.sum();
  CHECK(first.item<float>() == second.item<float>());
  Tensor rows = ember::randn({100000, 3}, {.device = kGpu});
  CHECK(ember::allclose(rows.sum({0}).cpu(), rows.sum({0}).cpu(), 0, 0));
  CHECK(rows.sum({0}).cpu().at<float>({1}) == Approx(rows.cpu().sum({0}).at<float>({1})).epsilon(1e-5));
}

TEST_CASE("sum of integers on CUDA is int64, as on the CPU, and exact") {
  Tensor ones = ember::ones({300000}, {.dtype = ember::kUInt8, .device = kGpu});
  Tensor total = ones.sum();
  CHECK(total.dtype() == ember::kInt64);
  CHECK(total.item<int64_t>() == 300000);
  Tensor mask = ember::gt(ember::arange(0.0, 1000.0, 1.0, {.dtype = ember::kInt64, .device = kGpu}), 499.0);
  CHECK(mask.sum().item<int64_t>() == 500);
  CHECK(ember::sum(ember::zeros({3, 0}, {.device = kGpu}), {1}).cpu().sizes() == ember::Shape{3});
  CHECK(ember::sum(ember::zeros({3, 0}, {.device = kGpu}), {1}).cpu().at<float>({2}) == 0);
}

TEST_CASE("bad input gives the same message on CUDA as on the CPU") {
  for (ember::Device d : {ember::Device::cpu(), kGpu}) {
    INFO(d);
    REQUIRE_THROWS_WITH(ember::add(ember::zeros({64, 10}, {.device = d}), ember::zeros({32}, {.device = d})),
                        "add: shapes [64, 10] and [32] cannot be broadcast");
    REQUIRE_THROWS_WITH(ember::mean(ember::zeros({3}, {.dtype = ember::kInt64, .device = d})),
                        Catch::Contains("mean: expected a floating-point tensor, got int64"));
    REQUIRE_THROWS_WITH(ember::max(ember::zeros({3, 0}, {.device = d}), 1), Catch::Contains("cannot reduce over dim 1 of size 0"));
    REQUIRE_THROWS_WITH(ember::sum(ember::zeros({3}, {.device = d}), {2}), Catch::Contains("sum: dim 2 is out of range"));
    Tensor f = ember::zeros({3}, {.device = d});
    REQUIRE_THROWS_WITH(ember::where(f, f, f), Catch::Contains("where: condition must be a bool or uint8 tensor, got float32"));
  }
}

TEST_CASE("tensors of more than 8 dims run on CUDA when their dims merge") {
  Shape shape{2, 1, 2, 1, 2, 1, 2, 1, 2, 3};
  Tensor a = ember::randn(shape), b = ember::randn({3});
  CHECK(ember::allclose(ember::add(a.cuda(), b.cuda()).cpu(), ember::add(a, b), 0, 0));
  CHECK(ember::allclose(a.cuda().sum({9}).cpu(), a.sum({9}), 1e-6, 1e-6));
}

TEST_CASE("at, item and printing read CUDA results") {
  Tensor x = ember::arange(0.0, 6.0, 1.0, {.dtype = ember::kFloat32, .device = kGpu}).reshape({2, 3});
  Tensor y = ember::mul(x.t(), 2.0);
  CHECK(y.at<float>({2, 1}) == 10.0f);
  CHECK(y.sum().item<float>() == 30.0f);
  CHECK(ember::gt(y, 4.0).at<bool>({2, 1}));
  CHECK_FALSE(ember::gt(y, 4.0).at<bool>({2, 0}));
  CHECK(y.str() == "tensor([[ 0.,  6.],\n        [ 2.,  8.],\n        [ 4., 10.]], device='cuda:0')");
}

TEST_CASE("a training step's in-place updates run on CUDA: add_, mul_, zero_") {
  Tensor w = ember::randn({33, 17});
  Tensor g = ember::randn({33, 17});
  Tensor gw = w.cuda(), gg = g.cuda();
  w.add_(g, -0.1);
  gw.add_(gg, -0.1);
  CHECK(ember::allclose(gw.cpu(), w, 0, 0));
  w.mul_(0.5);
  gw.mul_(0.5);
  CHECK(ember::allclose(gw.cpu(), w, 0, 0));
  gw.zero_();
  CHECK(gw.abs().sum().item<float>() == 0.0f);
}

TEST_CASE("ops on a second GPU run there while the first is current") {
  if (ember::cuda::device_count() < 2) {
    SUCCEED("one GPU: nothing to check");
    return;
  }
  const ember::Device second = ember::Device::cuda(1);
  Tensor a = ember::randn({33, 17}), b = ember::randn({17});
  Tensor ga = a.to(second), gb = b.to(second);
  Tensor sum = ember::add(ga.t().contiguous().t(), gb);
  CHECK(sum.device() == second);
  CHECK(ember::allclose(sum.cpu(), ember::add(a, b), 0, 0));
  CHECK(ember::allclose(ember::sum(sum, {0}).cpu(), ember::sum(ember::add(a, b), {0}), 1e-5, 1e-5));
  Tensor filled = ember::zeros({5, 5}, {.device = second});
  filled.t().narrow(0, 1, 2).fill_(2.0);
  CHECK(filled.sum().item<float>() == 20.0f);
  CHECK(ember::argmax(sum, 1).cpu().at<int64_t>({4}) == ember::argmax(ember::add(a, b), 1).at<int64_t>({4}));
}

TEST_CASE("a copy from one GPU to another waits for the work that wrote its source") {
  if (ember::cuda::device_count() < 2) {
    SUCCEED("one GPU: nothing to check");
    return;
  }
  Tensor a = ember::randn({1 << 16});
  Tensor on1 = a.to(ember::Device::cuda(1));
  Tensor out = ember::empty({1 << 16}, {.device = ember::Device::cuda(0)});
  for (int attempt = 0; attempt < 10; ++attempt) {
    out.zero_();
    ember::cuda::synchronize();
    Tensor tripled = ember::mul(on1, 3.0);  // queued on cuda:1's stream
    out.copy_(tripled);                     // queued on cuda:0's stream
    CHECK(ember::allclose(out.cpu(), ember::mul(a, 3.0), 0, 0));
  }
}

TEST_CASE("parameter initialisation gives the same numbers on CPU and CUDA for the same seed") {
  ember::manual_seed(11);
  Tensor cpu = ember::rand({1000});
  Tensor cpu_scaled = ember::add(ember::mul(cpu, 0.4), -0.2);
  ember::manual_seed(11);
  Tensor gpu = ember::rand({1000}, {.device = kGpu});
  Tensor gpu_scaled = ember::add(ember::mul(gpu, 0.4), -0.2);
  CHECK(ember::allclose(gpu_scaled.cpu(), cpu_scaled, 0, 0));
}
