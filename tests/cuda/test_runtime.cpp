// The CUDA runtime: events order streams, copies out of pinned memory run asynchronously and
// keep their buffer alive, streams and guards restore what they changed, errors name the call.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include "ember/core/cuda/check.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

using ember::Tensor;

TEST_CASE("an event orders a side stream after work on the current stream") {
  cudaStream_t side = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess);
  Tensor x = ember::randn({1 << 20}).cuda();
  Tensor doubled = ember::empty({1 << 20}, {.device = ember::Device::cuda(0)});
  ember::cuda::Event produced(0, /*timing=*/true), done(0, /*timing=*/true);
  Tensor y = ember::mul(x, 2.0);  // on the current (default) stream
  produced.record(ember::cuda::current_stream(0));
  produced.wait(side);
  {
    ember::cuda::StreamGuard on_side(0, side);
    doubled.copy_(y);
    done.record(side);
  }
  CHECK(ember::cuda::current_stream(0) == nullptr);
  done.synchronize();
  CHECK(done.query());
  CHECK(produced.elapsed_ms(done) >= 0.0f);
  CHECK(ember::allclose(doubled.cpu(), ember::mul(x.cpu(), 2.0), 0, 0));
  cudaStreamDestroy(side);
}

TEST_CASE("a copy out of pinned memory is asynchronous and the buffer outlives it") {
  Tensor result;
  Tensor expected = ember::randn({4 << 20});
  {
    Tensor pinned = expected.pin_memory();
    result = pinned.to(ember::Device::cuda(0));
  }  // the pinned block is freed here: freeing waits for the copy
  CHECK(ember::allclose(result.cpu(), expected, 0, 0));
}

TEST_CASE("DeviceGuard restores the current device; failures name the CUDA call") {
  int before = -1;
  REQUIRE(cudaGetDevice(&before) == cudaSuccess);
  { ember::cuda::DeviceGuard guard(0); }
  int after = -1;
  REQUIRE(cudaGetDevice(&after) == cudaSuccess);
  CHECK(after == before);
  auto bad_call = [] { EMBER_CUDA_CHECK(cudaSetDevice(1 << 20)); };
  REQUIRE_THROWS_WITH(bad_call(), Catch::Contains("CUDA error: cudaSetDevice(1 << 20) failed: ") &&
                                      Catch::Contains("test_runtime.cpp:"));
  REQUIRE_THROWS_WITH(ember::cuda::synchronize(1 << 20), Catch::Contains("device cuda:1048576 is not available"));
  // The failed call's error is reported once: the next kernel launch does not report it again.
  REQUIRE_NOTHROW(ember::mul(ember::ones({4}).cuda(), 2.0));
}

TEST_CASE("a failed runtime call's error does not resurface at the next launch") {
  auto bad_call = [] { EMBER_CUDA_CHECK(cudaSetDevice(-1)); };
  REQUIRE_THROWS(bad_call());
  CHECK(cudaPeekAtLastError() == cudaSuccess);
  Tensor doubled = ember::mul(ember::ones({4}).cuda(), 2.0);
  CHECK(doubled.cpu().at<float>({3}) == 2.0f);
}
