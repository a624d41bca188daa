// The emulated devices' streams are asynchronous: each is a queue run by its own worker, with
// random delays (EMBER_EMULATED_JITTER=500 in this test's ctest). A read not ordered after the
// work that produces it reads stale data; an event orders it; timing events measure.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"

using ember::Tensor;

namespace {

const ember::Device cuda0 = ember::Device::cuda(0);

// Fills `y` with 2 on `side`, then reads it on the default stream, ordered by an event or not.
// Returns how many of `tries` reads saw something other than the 2s.
int stale_reads(bool ordered, int tries) {
  cudaStream_t side = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess);
  int stale = 0;
  for (int t = 0; t < tries; ++t) {
    Tensor y = ember::zeros({1 << 14}, {.device = cuda0});
    ember::cuda::synchronize(0);
    ember::cuda::Event filled(0);
    {
      ember::cuda::StreamGuard on_side(0, side);
      y.fill_(2.0);
      filled.record(side);
    }
    if (ordered) filled.wait(ember::cuda::current_stream(0));
    Tensor host = y.cpu();  // queued on the default stream, which a non-blocking stream does not order
    if (!ember::allclose(host, ember::full({1 << 14}, 2.0), 0, 0)) ++stale;
    ember::cuda::synchronize(0);
  }
  cudaStreamDestroy(side);
  return stale;
}

}  // namespace

TEST_CASE("a result read before its stream is synchronised is stale; an event makes it right") {
  CHECK(stale_reads(/*ordered=*/false, 20) > 0);
  CHECK(stale_reads(/*ordered=*/true, 20) == 0);
}

TEST_CASE("the legacy default stream orders itself with blocking streams, not with non-blocking ones") {
  cudaStream_t blocking = nullptr;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  for (int t = 0; t < 10; ++t) {
    Tensor y = ember::zeros({1 << 14}, {.device = cuda0});
    {
      ember::cuda::StreamGuard on_blocking(0, blocking);
      y.fill_(3.0);
    }
    CHECK(ember::allclose(y.cpu(), ember::full({1 << 14}, 3.0), 0, 0));  // the default stream waits for it
  }
  cudaStreamDestroy(blocking);
}

TEST_CASE("events time the work between them, and a query says whether it ran") {
  ember::cuda::Event start(0, /*timing=*/true), stop(0, /*timing=*/true);
  Tensor x = ember::randn({256, 256}).to(cuda0);
  start.record(nullptr);
  Tensor y = ember::matmul(x, x);
  stop.record(nullptr);
  stop.synchronize();
  CHECK(stop.query());
  CHECK(start.elapsed_ms(stop) > 0.0f);
  ember::cuda::Event untimed(0);
  untimed.record(nullptr);
  untimed.synchronize();
  REQUIRE_THROWS_WITH(start.elapsed_ms(untimed), Catch::Contains("cudaEventDisableTiming"));
}

TEST_CASE("cudaStreamQuery reports queued work; a destroyed stream is refused") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
}
