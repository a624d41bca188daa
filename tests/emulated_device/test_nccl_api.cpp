// The emulated NCCL through its API (kernels/cuda/emulator/device/include/nccl.h) on the emulated
// GPUs: ncclCommInitAll and ncclCommInitRank (threads, and one thread inside a group), all-reduce
// and broadcast queued on each rank's stream, a destroy while work is queued, collectives captured
// into a graph and replayed, and the argument errors that name the call and what was expected.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Values from 1e-3 to 1e3, so that a sum in another rank order rounds differently.
std::vector<float> input(int rank, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    v[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i) + rank) * std::pow(10.0, (i + rank) % 7 - 3.0));
  }
  return v;
}

std::vector<float> rank_order_sum(int nranks, size_t count) {
  std::vector<float> sum = input(0, count);
  for (int r = 1; r < nranks; ++r) {
    const std::vector<float> x = input(r, count);
    for (size_t i = 0; i < count; ++i) sum[i] += x[i];
  }
  return sum;
}

// One rank's device, stream and buffer.
struct RankBuffers {
  int device = 0;
  cudaStream_t stream = nullptr;
  float* data = nullptr;
  size_t count = 0;

  RankBuffers(int d, const std::vector<float>& values) : device(d), count(values.size()) {
    REQUIRE(cudaSetDevice(d) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(float)) == cudaSuccess);
    REQUIRE(cudaMemcpy(data, values.data(), count * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~RankBuffers() {
    cudaSetDevice(device);
    cudaStreamSynchronize(stream);
    cudaFree(data);
    cudaStreamDestroy(stream);
  }
  std::vector<float> read() const {
    REQUIRE(cudaSetDevice(device) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    std::vector<float> out(count);
    REQUIRE(cudaMemcpy(out.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    return out;
  }
};

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string last_error() { return ncclGetLastError(nullptr); }

}  // namespace

TEST_CASE("ncclCommInitAll over two emulated GPUs: all-reduce in rank order, average, broadcast") {
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    int count = 0, device = -1, rank = -1;
    CHECK(ncclCommCount(comms[r], &count) == ncclSuccess);
    CHECK(ncclCommCuDevice(comms[r], &device) == ncclSuccess);
    CHECK(ncclCommUserRank(comms[r], &rank) == ncclSuccess);
    CHECK((count == 2 && device == r && rank == r));
  }
  const size_t count = 100'000;  // 400 KB
  RankBuffers rank0(0, input(0, count)), rank1(1, input(1, count));
  RankBuffers* ranks[2] = {&rank0, &rank1};

  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    CHECK(ncclAllReduce(ranks[r]->data, ranks[r]->data, count, ncclFloat32, ncclSum, comms[r], ranks[r]->stream) ==
          ncclSuccess);
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  const std::vector<float> sum = rank_order_sum(2, count);
  CHECK(bitwise_equal(rank0.read(), sum));
  CHECK(bitwise_equal(rank1.read(), sum));

  // Each rank from its own thread, as NcclCommunicator's users do: the average of two equal
  // buffers is the buffer itself.
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      ncclAllReduce(ranks[r]->data, ranks[r]->data, count, ncclFloat32, ncclAvg, comms[r], ranks[r]->stream);
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bitwise_equal(rank0.read(), sum));
  CHECK(bitwise_equal(rank1.read(), sum));

  const std::vector<float> from_root = input(7, count);
  REQUIRE(cudaMemcpy(rank1.data, from_root.data(), count * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  for (int r = 0; r < 2; ++r) {
    CHECK(ncclBroadcast(ranks[r]->data, ranks[r]->data, count, ncclFloat32, 1, comms[r], ranks[r]->stream) ==
          ncclSuccess);
  }
  CHECK(bitwise_equal(rank0.read(), from_root));
  CHECK(bitwise_equal(rank1.read(), from_root));
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("ncclCommInitRank: ranks on threads, and one thread initialising both inside a group") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comms[2] = {};
  ncclResult_t results[2] = {ncclInternalError, ncclInternalError};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // init blocks until both come
      cudaSetDevice(r);
      results[r] = ncclCommInitRank(&comms[r], 2, id, r);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE((results[0] == ncclSuccess && results[1] == ncclSuccess));
  int device = -1;
  CHECK(ncclCommCuDevice(comms[1], &device) == ncclSuccess);
  CHECK(device == 1);  // the device current at init
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);

  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  REQUIRE(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    REQUIRE(ncclCommInitRank(&comms[r], 2, id, r) == ncclSuccess);  // returns at once inside a group
  }
  REQUIRE(ncclGroupEnd() == ncclSuccess);
  RankBuffers rank0(0, input(0, 1000)), rank1(1, input(1, 1000));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 1000, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclSuccess);
  CHECK(ncclAllReduce(rank1.data, rank1.data, 1000, ncclFloat32, ncclSum, comms[1], rank1.stream) == ncclSuccess);
  CHECK(bitwise_equal(rank0.read(), rank_order_sum(2, 1000)));
  CHECK(bitwise_equal(rank1.read(), rank_order_sum(2, 1000)));
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("ncclCommDestroy right after queuing: the queued collectives still complete") {
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  RankBuffers rank0(0, input(0, 5000)), rank1(1, input(1, 5000));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 5000, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclSuccess);
  CHECK(ncclCommDestroy(comms[0]) == ncclSuccess);
  CHECK(ncclAllReduce(rank1.data, rank1.data, 5000, ncclFloat32, ncclSum, comms[1], rank1.stream) == ncclSuccess);
  CHECK(ncclCommDestroy(comms[1]) == ncclSuccess);
  CHECK(bitwise_equal(rank0.read(), rank_order_sum(2, 5000)));
  CHECK(bitwise_equal(rank1.read(), rank_order_sum(2, 5000)));
}

TEST_CASE("collectives captured into a graph run at each replay, in the order the ranks replay them") {
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  std::vector<float> ones(64, 1.0f);
  RankBuffers rank0(0, ones), rank1(1, ones);
  RankBuffers* ranks[2] = {&rank0, &rank1};
  cudaGraphExec_t execs[2] = {};
  for (int r = 0; r < 2; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(ranks[r]->stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    REQUIRE(ncclAllReduce(ranks[r]->data, ranks[r]->data, 64, ncclFloat32, ncclSum, comms[r], ranks[r]->stream) ==
            ncclSuccess);
    cudaGraph_t graph = nullptr;
    REQUIRE(cudaStreamEndCapture(ranks[r]->stream, &graph) == cudaSuccess);
    REQUIRE(cudaGraphInstantiate(&execs[r], graph, 0) == cudaSuccess);
    cudaGraphDestroy(graph);
  }
  CHECK(rank0.read() == ones);  // captured, not run
  for (int replay = 0; replay < 3; ++replay) {
    for (int r = 0; r < 2; ++r) {
      REQUIRE(cudaSetDevice(r) == cudaSuccess);
      REQUIRE(cudaGraphLaunch(execs[r], ranks[r]->stream) == cudaSuccess);
    }
  }
  CHECK(rank0.read() == std::vector<float>(64, 8.0f));  // 1 -> 2 -> 4 -> 8
  CHECK(rank1.read() == std::vector<float>(64, 8.0f));
  for (int r = 0; r < 2; ++r) cudaGraphExecDestroy(execs[r]);
  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("NCCL argument errors return NCCL's codes, and ncclGetLastError names the call and what was expected") {
  ncclComm_t comms[2] = {};
  REQUIRE(ncclCommInitAll(comms, 2, nullptr) == ncclSuccess);
  RankBuffers rank0(0, input(0, 16)), rank1(1, input(1, 16));
  std::vector<float> host(16);

  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, ncclFloat32, ncclSum, nullptr, rank0.stream) == ncclInvalidArgument);
  CHECK(last_error() == "ncclAllReduce: comm is null");
  CHECK(ncclAllReduce(rank0.data, rank1.data, 16, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::StartsWith("ncclAllReduce: recvbuff [") &&
                               Catch::Contains("+64 bytes) is memory of cuda:1, but the communicator (rank 0 of 2 on "
                                               "cuda:0) needs memory of cuda:0"));
  CHECK(ncclAllReduce(host.data(), rank0.data, 16, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("sendbuff [") && Catch::Contains("is not in any live cudaMalloc allocation"));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 17, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("+68 bytes) runs past the end of its allocation on cuda:0"));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, ncclFloat16, ncclSum, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("cannot be reduced on the emulated device"));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, static_cast<ncclDataType_t>(42), ncclSum, comms[0], rank0.stream) ==
        ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("datatype 42 is not an ncclDataType_t (0 to 11)"));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, ncclFloat32, static_cast<ncclRedOp_t>(9), comms[0], rank0.stream) ==
        ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("op 9 is not a built-in ncclRedOp_t"));
  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, ncclFloat32, ncclSum, comms[0], rank1.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("belongs to cuda:1, but the communicator (rank 0 of 2 on cuda:0) is on cuda:0"));
  CHECK(ncclBroadcast(rank0.data, rank0.data, 16, ncclFloat32, 2, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK(last_error() == "ncclBroadcast: root 2 is out of range for 2 ranks");
  CHECK(ncclAllReduce(rank0.data, rank0.data, 0, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclSuccess);

  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK(last_error() == "ncclGroupEnd: no ncclGroupStart to end on this thread");
  ncclComm_t more[2] = {};
  const int twice[2] = {1, 1};
  CHECK(ncclCommInitAll(more, 2, twice) == ncclInvalidUsage);
  CHECK(last_error() == "ncclCommInitAll: devlist lists cuda:1 twice (one rank per device)");
  const int missing[1] = {5};
  CHECK(ncclCommInitAll(more, 1, missing) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("devlist[0] cuda:5 does not exist (2 emulated GPUs"));
  ncclUniqueId zeros{};
  CHECK(ncclCommInitRank(&more[0], 2, zeros, 0) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("commId is not an id from ncclGetUniqueId") &&
                               Catch::Contains("got all zero bytes"));

  for (ncclComm_t comm : comms) CHECK(ncclCommDestroy(comm) == ncclSuccess);
  CHECK(ncclAllReduce(rank0.data, rank0.data, 16, ncclFloat32, ncclSum, comms[0], rank0.stream) == ncclInvalidArgument);
  CHECK_THAT(last_error(), Catch::Contains("is not a live communicator (destroyed, or never initialised)"));
  CHECK(ncclCommDestroy(comms[0]) == ncclInvalidArgument);
}

TEST_CASE("ncclGetErrorString, ncclGetVersion") {
  CHECK(std::string(ncclGetErrorString(ncclSuccess)) == "no error");
  CHECK_THAT(ncclGetErrorString(ncclInvalidArgument), Catch::StartsWith("invalid argument"));
  CHECK_THAT(ncclGetErrorString(ncclRemoteError), Catch::StartsWith("remote process exited"));
  CHECK(std::string(ncclGetErrorString(static_cast<ncclResult_t>(99))) == "unknown result code");
  int version = 0;
  CHECK(ncclGetVersion(&version) == ncclSuccess);
  CHECK(version == NCCL_VERSION_CODE);
}
