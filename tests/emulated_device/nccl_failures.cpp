// The emulated NCCL's failures at the API, each of which leaves an emulated GPU faulted (a sticky
// error, as a GPU's lost context), so they run in their own process: a rank that never joins
// (ncclCommInitRank returns ncclSystemError), and a collective whose peer never comes (it fails on
// its stream: the device's sticky error names the rank and what it waited for; the communicator
// keeps the error for ncclCommGetAsyncError and every later call; the peer that comes late is told
// at once why the communicator failed). EMBER_EMULATED_NCCL_TIMEOUT is 0.5 s here.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <string>

namespace {

struct ShortTimeout {
  ShortTimeout() { setenv("EMBER_EMULATED_NCCL_TIMEOUT", "0.5", 1); }  // before any stream exists
};
const ShortTimeout short_timeout;

std::string last_error() { return ncclGetLastError(nullptr); }

}  // namespace

TEST_CASE("ncclCommInitRank without the other rank returns ncclSystemError naming the missing rank") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(ncclCommInitRank(&comm, 2, id, 0) == ncclSystemError);
  CHECK(comm == nullptr);
  CHECK_THAT(last_error(), Catch::StartsWith("ncclCommInitRank: rank 0 waited 0.5 s for rank 1 to join clique "
                                             "/ember-nccl-") &&
                               Catch::Contains("(missing: rank 1 of 2)"));
}

TEST_CASE("a collective whose peer never comes fails on its stream, and the late peer learns why") {
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  float* data[2] = {};
  cudaStream_t streams[2] = {};
  for (int r = 0; r < 2; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&data[r]), 16 * sizeof(float)) == cudaSuccess);
  }
  REQUIRE(ncclAllReduce(data[0], data[0], 16, ncclFloat32, ncclSum, comms[0], streams[0]) == ncclSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const cudaError_t synced = cudaStreamSynchronize(streams[0]);  // rank 1 never called: 0.5 s, then the error
  CHECK(synced != cudaSuccess);
  CHECK_THAT(cudaGetErrorString(synced),
             Catch::Contains("ncclAllReduce: rank 0 of 2 on cuda:0: rank 0 waited 0.5 s for rank 1 (pid ") &&
                 Catch::Contains("to post collective #1: all_reduce(sum, 16 float32), chunk 0"));
  ncclResult_t async = ncclSuccess;
  CHECK(ncclCommGetAsyncError(comms[0], &async) == ncclSuccess);
  CHECK(async == ncclSystemError);
  CHECK(ncclAllReduce(data[0], data[0], 16, ncclFloat32, ncclSum, comms[0], streams[0]) == ncclSystemError);
  CHECK_THAT(last_error(), Catch::StartsWith("ncclAllReduce: an earlier collective failed: ncclAllReduce: rank 0 of 2"));

  // Rank 1 comes late: its collective fails at once with rank 0's reason, not after its own timeout.
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(ncclAllReduce(data[1], data[1], 16, ncclFloat32, ncclSum, comms[1], streams[1]) == ncclSuccess);
  const cudaError_t late = cudaStreamSynchronize(streams[1]);
  CHECK(late != cudaSuccess);
  CHECK_THAT(cudaGetErrorString(late), Catch::Contains("rank 1 stops: rank 0 failed the communicator: rank 0 waited"));
  CHECK(ncclCommGetAsyncError(comms[1], &async) == ncclSuccess);
  CHECK(async == ncclSystemError);
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}
