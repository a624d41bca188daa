// Device, DType, factories, views, copies and printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"
#include "ember/core/threading.h"

using ember::Tensor;

TEST_CASE("Device parses cpu, cuda and cuda:N, compares and prints") {
  CHECK(ember::Device("cpu") == ember::Device::cpu());
  CHECK(ember::Device("cuda") == ember::Device::cuda(0));
  CHECK(ember::Device("cuda:1").index() == 1);
  CHECK(ember::Device("cuda:1").str() == "cuda:1");
  CHECK(ember::Device::cuda(1) != ember::Device::cuda(0));
  REQUIRE_THROWS_WITH(ember::Device("gpu"), "Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"gpu\"");
  REQUIRE_THROWS_WITH(ember::Device("cuda:x"), Catch::Contains("got \"cuda:x\""));
}

TEST_CASE("cuda::is_available answers false without a GPU, and never throws") {
  CHECK_NOTHROW(ember::cuda::is_available());
  CHECK(ember::cuda::is_available() == (ember::cuda::device_count() > 0));
  CHECK(ember::cuda::devices().size() == static_cast<size_t>(ember::cuda::device_count()));
}

TEST_CASE("dtypes have PyTorch's names and sizes") {
  CHECK(ember::dtype_name(ember::kFloat32) == "float32");
  CHECK(ember::element_size(ember::kFloat64) == 8);
  CHECK(ember::element_size(ember::kInt64) == 8);
  CHECK(ember::element_size(ember::kUInt8) == 1);
}

TEST_CASE("factories fill, count and draw as PyTorch's do") {
  CHECK(ember::zeros({2, 3}).sum().item<float>() == 0);
  CHECK(ember::ones({2, 3}).sum().item<float>() == 6);
  CHECK(ember::full({4}, 2.5, {.dtype = ember::kFloat64}).at<double>({3}) == 2.5);
  Tensor r = ember::arange(5);
  CHECK(r.dtype() == ember::kInt64);
  CHECK(r.at<int64_t>({4}) == 4);
  Tensor down = ember::arange(3.0, 0.0, -1.0, {.dtype = ember::kFloat32});
  CHECK(down.numel() == 3);
  CHECK(down.at<float>({2}) == 1.0f);
  CHECK(ember::empty({0, 3}).numel() == 0);
  ember::manual_seed(42);
  Tensor a = ember::randn({10000});
  ember::manual_seed(42);
  Tensor b = ember::randn({10000});
  CHECK(ember::allclose(a, b, 0, 0));
  CHECK(a.mean().item<float>() == Approx(0).margin(0.05));
  CHECK(ember::sqrt(ember::mean(ember::mul(a, a))).item<float>() == Approx(1).margin(0.05));
  Tensor u = ember::rand({10000});
  CHECK(ember::min(u).item<float>() >= 0.0f);
  CHECK(ember::max(u).item<float>() < 1.0f);
  CHECK(u.mean().item<float>() == Approx(0.5).margin(0.02));
  Tensor t = ember::tensor({1.f, 2.f, 3.f});
  CHECK(t.sizes() == ember::Shape{3});
  CHECK(t.at<float>({1}) == 2.0f);
}

TEST_CASE("a large fill is every element on 1 and 2 threads, zeros through memset, -0.0 keeping its sign") {
  const int threads = ember::get_num_threads();
  const int64_t n = (1 << 18) + 7;  // past the threaded fill's 256 KB, an odd split
  for (int t : {1, 2}) {
    ember::set_num_threads(t);
    for (double value : {0.0, -0.0, 1.5}) {
      { Tensor sevens = ember::full({n}, 7.0); }  // on 2 threads the block cache hands its block on
      Tensor filled = ember::full({n}, value);
      INFO(t << " threads, value " << value);
      CHECK(ember::eq(filled, ember::full({}, value)).sum().item<int64_t>() == n);
      CHECK(std::signbit(filled.data<float>()[0]) == std::signbit(value));
      CHECK(std::signbit(filled.data<float>()[n - 1]) == std::signbit(value));
    }
    Tensor wide = ember::zeros({n}, {.dtype = ember::kFloat64});
    CHECK(ember::eq(wide, ember::full({}, 0.0)).sum().item<int64_t>() == n);
  }
  ember::set_num_threads(threads);
}

TEST_CASE("from_blob shares the caller's memory and runs the deleter when the last view dies") {
  float data[6] = {0, 1, 2, 3, 4, 5};
  bool deleted = false;
  {
    Tensor t = ember::from_blob(data, {2, 3}, {}, [&](void*) { deleted = true; });
    Tensor view = t.t();
    t = Tensor();
    view.select(0, 1).fill_(9);
    CHECK_FALSE(deleted);
  }
  CHECK(deleted);
  CHECK(data[1] == 9);
  CHECK(data[4] == 9);
}

TEST_CASE("views share storage with their base") {
  Tensor base = ember::arange(0.0, 24.0, 1.0, {.dtype = ember::kFloat32});
  Tensor v = base.view({2, 3, 4});
  v.select(1, 2).fill_(-1);
  CHECK(base.at<float>({8}) == -1);
  CHECK(base.view({-1, 6}).sizes() == ember::Shape{4, 6});
  Tensor tr = v.transpose(0, 2);
  CHECK(tr.sizes() == ember::Shape{4, 3, 2});
  CHECK_FALSE(tr.is_contiguous());
  REQUIRE_THROWS_WITH(tr.view({24}), Catch::Contains("view: the layout of a tensor of shape [4, 3, 2]"));
  Tensor copied = tr.reshape({24});
  CHECK(copied.is_contiguous());
  CHECK(copied.at<float>({1}) == v.at<float>({1, 0, 0}));
  CHECK(v.flatten(1).sizes() == ember::Shape{2, 12});
  CHECK(v.unsqueeze(0).squeeze(0).sizes() == v.sizes());
  CHECK(v.permute({2, 0, 1}).sizes() == ember::Shape{4, 2, 3});
  CHECK(v.narrow(2, 1, 2).at<float>({0, 0, 0}) == 1);
  CHECK(v[1].sizes() == ember::Shape{3, 4});
  Tensor e = ember::tensor({1.f, 2.f}).reshape({2, 1}).expand({2, 3});
  CHECK(e.stride(1) == 0);
  CHECK(e.at<float>({1, 2}) == 2);
  REQUIRE_THROWS_WITH(ember::ones({2, 3}).expand({4, 3}), Catch::Contains("expand: the size 2 of dim 0 must be 1"));
  REQUIRE_THROWS_WITH(v.select(3, 0), Catch::Contains("select: dim 3 is out of range for a tensor with 3 dims"));
  REQUIRE_THROWS_WITH(v.narrow(0, 1, 5), Catch::Contains("narrow: range [1, 6) is out of bounds"));
}

TEST_CASE("copy_ broadcasts, casts and walks arbitrary strided layouts; clone is independent") {
  Tensor dst = ember::zeros({3, 4}, {.dtype = ember::kFloat64}).t();  // non-contiguous destination
  Tensor src = ember::arange(4).to(ember::kInt64).reshape({4, 1});
  dst.copy_(src);
  CHECK(dst.at<double>({3, 2}) == 3.0);
  Tensor c = dst.clone();
  c.fill_(7);
  CHECK(dst.at<double>({0, 0}) == 0.0);
  CHECK(ember::ones({2}).to(ember::kInt64).dtype() == ember::kInt64);
  REQUIRE_THROWS_WITH(ember::ones({2}).item<float>(), "item: expected a tensor with one element, got shape [2] (2 elements)");
}

TEST_CASE("tensors print as PyTorch prints them") {
  CHECK(ember::tensor({1.f, 2.f}).reshape({1, 2}).str() == "tensor([[1., 2.]])");
  CHECK(ember::tensor({1.5f, 2.f}).str() == "tensor([1.5000, 2.0000])");
  CHECK(ember::arange(3).str() == "tensor([0, 1, 2])");
  CHECK(ember::gt(ember::arange(3), 0.5).str() == "tensor([False,  True,  True])");
  CHECK(ember::ones({2}, {.dtype = ember::kFloat64}).str() == "tensor([1., 1.], dtype=float64)");
  CHECK(ember::ones({2}).requires_grad_().str() == "tensor([1., 1.], requires_grad=True)");
  CHECK(ember::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2}).str() == "tensor([[1., 2.],\n        [3., 4.]])");
}

TEST_CASE("pin_memory without a GPU is a clear error") {
  if (ember::cuda::is_available()) return;  // covered by the CUDA tests
  REQUIRE_THROWS_WITH(ember::ones({2}).pin_memory(), Catch::Contains("pinned host memory"));
}

// Issue 20, point 1: one checked size computation behind every factory and loader.
TEST_CASE("factories reject shapes whose element count, byte size or strides overflow int64") {
  constexpr int64_t k31 = int64_t{1} << 31, k62 = int64_t{1} << 62;
  // 2^62 float32 elements are 2^64 bytes: the byte size overflows although the count does not.
  REQUIRE_THROWS_WITH(ember::zeros({k31, k31}),
                      Catch::Contains("empty: shape [2147483648, 2147483648] of float32 is too large to address") &&
                          Catch::Contains("storage size calculation overflowed int64"));
  REQUIRE_THROWS_WITH(ember::zeros({k62}), Catch::Contains("empty: shape [4611686018427387904] of float32"));
  REQUIRE_THROWS_AS(ember::empty({3, k62}), ember::Error);                      // the count overflows
  REQUIRE_THROWS_AS(ember::empty({65536, 65536, 65536, 65536}), ember::Error);  // wraps to exactly 0
  REQUIRE_THROWS_AS(ember::ones({k31, k31}, {.dtype = ember::kUInt8}), ember::Error);
  // No elements, but the strides of the other dims overflow all the same.
  REQUIRE_THROWS_WITH(ember::empty({0, k62, k62}), Catch::Contains("empty: shape [0, 4611686018427387904, "));
  REQUIRE_THROWS_AS(ember::from_blob(nullptr, {0, k62, 4}), ember::Error);
  // The largest shapes that fit still compute their sizes exactly (no allocation needed for 0).
  CHECK(ember::empty({0, k31, k31}, {.dtype = ember::kUInt8}).numel() == 0);
  CHECK(ember::empty({0, k31, k31}, {.dtype = ember::kUInt8}).stride(0) == k62);
}

TEST_CASE("a view whose element count overflows cannot match the tensor by wrapping around") {
  constexpr int64_t k62 = int64_t{1} << 62;
  // [2^62, 4] has 2^64 elements, which wraps to 0, the element count of an empty tensor.
  REQUIRE_THROWS_WITH(ember::empty({0}).view({k62, 4}), Catch::Contains("view: shape [4611686018427387904, 4]"));
  REQUIRE_THROWS_AS(ember::empty({0}).reshape({k62, 4}), ember::Error);
  REQUIRE_THROWS_AS(ember::empty({0}).reshape({k62, 4, -1}), ember::Error);
}

TEST_CASE("a shape larger than this machine's memory is OutOfMemory before any allocation") {
  // 2^50 float32 elements (4 PiB) fit int64, but no CPU allocator can give them; the error
  // comes from a check, not from malloc (whose failure a sanitizer would turn into an abort).
  REQUIRE_THROWS_AS(ember::empty({int64_t{1} << 50}), ember::OutOfMemory);
  REQUIRE_THROWS_WITH(ember::empty({int64_t{1} << 50}),
                      Catch::Contains("cpu allocator: cannot allocate 4503599627370496 bytes") &&
                          Catch::Contains("more than this machine's memory and swap"));
}

TEST_CASE("arange with more elements than int64 can count is an error, not an undefined conversion") {
  REQUIRE_THROWS_WITH(ember::arange(0.0, 1e30), Catch::Contains("arange: the range [0, 1e+30)") &&
                                                    Catch::Contains("more than int64 can count"));
  REQUIRE_THROWS_AS(ember::arange(0.0, std::numeric_limits<double>::infinity()), ember::Error);
  // Within int64 but beyond any memory: the allocator's check.
  REQUIRE_THROWS_AS(ember::arange(0.0, 1e18), ember::OutOfMemory);
}
