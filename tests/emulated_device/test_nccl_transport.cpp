// The emulated NCCL's transport on its own (kernels/cuda/emulator/device/nccl_transport.h): ranks
// as threads of this process and as fork()ed processes, all-reduce in rank order with bit-identical
// results, every type and reduction, chunked buffers, broadcast from any root, late ranks, and the
// failures that must be errors rather than hangs (a missing, exited or departed peer, mismatched
// collectives, ranks that disagree). No CUDA runtime is needed.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ember/kernels/cuda/emulator/device/nccl_transport.h"

using ember::emu::nccl::Endpoint;
using ember::emu::nccl::new_clique_name;
using ember::emu::nccl::Reduction;
using ember::emu::nccl::Scalar;
using ember::emu::nccl::TransportError;
using ember::emu::nccl::TransportOptions;
using Kind = TransportError::Kind;
using namespace std::chrono_literals;

namespace {

TransportOptions options(size_t chunk_bytes = size_t{1} << 20, std::chrono::milliseconds timeout = 20s) {
  return TransportOptions{.chunk_bytes = chunk_bytes, .timeout = timeout};
}

// Runs body(rank) on `nranks` threads at once; returns each rank's exception message, "" if none.
// (Catch2's assertions are not thread-safe: the ranks record, the test thread checks.)
std::vector<std::string> run_ranks(int nranks, const std::function<void(int)>& body) {
  std::vector<std::string> errors(static_cast<size_t>(nranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

std::vector<std::string> no_errors(int nranks) { return std::vector<std::string>(static_cast<size_t>(nranks)); }

// Runs body(rank) in `nranks` fork()ed processes; returns each one's exit status (0: passed; the
// body prints why it failed to stderr). SIGALRM ends a child that hangs.
std::vector<int> run_ranks_in_processes(int nranks, const std::function<int(int)>& body) {
  std::fflush(nullptr);
  std::vector<pid_t> children;
  for (int r = 0; r < nranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(60);
      int code = 3;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d (pid %d): %s\n", r, static_cast<int>(getpid()), e.what());
        code = 2;
      }
      std::fflush(nullptr);
      _exit(code);
    }
    children.push_back(pid);
  }
  std::vector<int> statuses;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    statuses.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return statuses;
}

bool name_exists(const std::string& clique) {
  const int fd = shm_open(clique.c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

// Rank r's input: values from 1e-4 to 1e4 in magnitude, so that float sums depend on their order.
template <typename T>
std::vector<T> input(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      const int exponent = static_cast<int>((i + 3 * static_cast<size_t>(rank)) % 9) - 4;
      v[i] = static_cast<T>(std::sin(0.7 * static_cast<double>(i) + rank) * std::pow(10.0, exponent));
    } else if constexpr (std::is_signed_v<T>) {
      v[i] = static_cast<T>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) - 5);  // -5..5
    } else {
      v[i] = static_cast<T>((i * 7 + static_cast<size_t>(rank) * 3) % 6);  // 0..5
    }
  }
  return v;
}

// The reference: inputs[0] (op) inputs[1] (op) ..., left to right, then / nranks for avg.
template <typename T>
std::vector<T> reduced(const std::vector<std::vector<T>>& inputs, Reduction op) {
  std::vector<T> out = inputs[0];
  for (size_t r = 1; r < inputs.size(); ++r) {
    for (size_t i = 0; i < out.size(); ++i) {
      const T x = inputs[r][i];
      switch (op) {
        case Reduction::sum:
        case Reduction::avg: out[i] = static_cast<T>(out[i] + x); break;
        case Reduction::prod: out[i] = static_cast<T>(out[i] * x); break;
        case Reduction::max: out[i] = std::max(out[i], x); break;
        case Reduction::min: out[i] = std::min(out[i], x); break;
      }
    }
  }
  if (op == Reduction::avg) {
    for (T& x : out) x = static_cast<T>(x / static_cast<T>(inputs.size()));
  }
  return out;
}

// "" when `got` and `want` are bitwise equal, else the first elements that differ.
template <typename T>
std::string differences(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  std::ostringstream out;
  out.precision(17);
  int shown = 0;
  size_t differing = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
    ++differing;
    if (shown++ < 3) out << "element " << i << ": got " << +got[i] << ", expected " << +want[i] << "; ";
  }
  if (differing > 0) out << differing << " of " << got.size() << " elements differ";
  return out.str();
}

template <typename T>
constexpr Scalar scalar_of() {
  if constexpr (std::is_same_v<T, int8_t>) return Scalar::int8;
  if constexpr (std::is_same_v<T, uint8_t>) return Scalar::uint8;
  if constexpr (std::is_same_v<T, int32_t>) return Scalar::int32;
  if constexpr (std::is_same_v<T, uint32_t>) return Scalar::uint32;
  if constexpr (std::is_same_v<T, int64_t>) return Scalar::int64;
  if constexpr (std::is_same_v<T, uint64_t>) return Scalar::uint64;
  if constexpr (std::is_same_v<T, float>) return Scalar::float32;
  if constexpr (std::is_same_v<T, double>) return Scalar::float64;
}

// All-reduces each rank's input(rank, count) on `nranks` threads; returns each rank's result.
template <typename T>
std::vector<std::vector<T>> all_reduce_on_threads(int nranks, size_t count, Reduction op, TransportOptions opts,
                                                  bool in_place = false) {
  const std::string clique = new_clique_name();
  std::vector<std::vector<T>> results(static_cast<size_t>(nranks));
  const auto errors = run_ranks(nranks, [&](int r) {
    Endpoint endpoint(clique, nranks, r, opts);
    endpoint.wait_for_peers();
    std::vector<T> send = input<T>(r, count);
    std::vector<T>& recv = results[static_cast<size_t>(r)];
    if (in_place) {
      recv = send;
      endpoint.all_reduce(recv.data(), recv.data(), count, scalar_of<T>(), op);
    } else {
      recv.assign(count, T{});
      endpoint.all_reduce(send.data(), recv.data(), count, scalar_of<T>(), op);
      if (send != input<T>(r, count)) throw std::runtime_error("all_reduce wrote into its send buffer");
    }
  });
  REQUIRE(errors == no_errors(nranks));
  return results;
}

template <typename T>
std::vector<std::vector<T>> inputs_of(int nranks, size_t count) {
  std::vector<std::vector<T>> inputs;
  for (int r = 0; r < nranks; ++r) inputs.push_back(input<T>(r, count));
  return inputs;
}

template <typename T>
void check_every_reduction(int nranks) {
  for (Reduction op : {Reduction::sum, Reduction::prod, Reduction::max, Reduction::min, Reduction::avg}) {
    INFO(ember::emu::nccl::scalar_name(scalar_of<T>()) << " " << ember::emu::nccl::reduction_name(op) << " over "
                                                       << nranks << " ranks");
    const auto results = all_reduce_on_threads<T>(nranks, 37, op, options());
    const auto want = reduced(inputs_of<T>(nranks, 37), op);
    for (int r = 0; r < nranks; ++r) CHECK(differences(results[static_cast<size_t>(r)], want) == "");
  }
}

}  // namespace

TEST_CASE("all_reduce sums in rank order, and every rank gets bit-identical results") {
  const int nranks = 4;
  const size_t count = 1000;
  const auto inputs = inputs_of<float>(nranks, count);
  const auto want = reduced(inputs, Reduction::sum);
  // The inputs are chosen so that another order rounds differently: the test can see the order.
  std::vector<std::vector<float>> reversed(inputs.rbegin(), inputs.rend());
  REQUIRE(differences(reduced(reversed, Reduction::sum), want) != "");
  std::vector<std::vector<float>> rotated{inputs[1], inputs[2], inputs[3], inputs[0]};
  REQUIRE(differences(reduced(rotated, Reduction::sum), want) != "");

  const auto results = all_reduce_on_threads<float>(nranks, count, Reduction::sum, options());
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r);
    CHECK(differences(results[static_cast<size_t>(r)], want) == "");
  }
}

TEST_CASE("all_reduce: every type and reduction (sum, prod, max, min, avg) against a reference") {
  check_every_reduction<int8_t>(3);
  check_every_reduction<uint8_t>(3);
  check_every_reduction<int32_t>(3);
  check_every_reduction<uint32_t>(2);
  check_every_reduction<int64_t>(3);
  check_every_reduction<uint64_t>(3);
  check_every_reduction<float>(3);
  check_every_reduction<double>(5);
  check_every_reduction<double>(1);  // one rank: the input itself (avg divides by 1)
}

TEST_CASE("all_reduce in place (send == recv), and average is the rank-order sum over nranks") {
  const auto results = all_reduce_on_threads<double>(3, 500, Reduction::avg, options(), /*in_place=*/true);
  std::vector<double> want = reduced(inputs_of<double>(3, 500), Reduction::sum);
  for (double& x : want) x /= 3;
  for (int r = 0; r < 3; ++r) CHECK(differences(results[static_cast<size_t>(r)], want) == "");
}

TEST_CASE("large buffers cross in many chunks, the last one partial") {
  SECTION("64-byte chunks: 1013 float64 is 127 chunks, in place and not") {
    for (bool in_place : {false, true}) {
      const auto results = all_reduce_on_threads<double>(3, 1013, Reduction::sum, options(64), in_place);
      const auto want = reduced(inputs_of<double>(3, 1013), Reduction::sum);
      for (int r = 0; r < 3; ++r) CHECK(differences(results[static_cast<size_t>(r)], want) == "");
    }
  }
  SECTION("int8 in 64-byte chunks: 200 elements, 4 chunks") {
    const auto results = all_reduce_on_threads<int8_t>(2, 200, Reduction::sum, options(64));
    const auto want = reduced(inputs_of<int8_t>(2, 200), Reduction::sum);
    for (int r = 0; r < 2; ++r) CHECK(differences(results[static_cast<size_t>(r)], want) == "");
  }
  SECTION("3,000,017 float32 (12 MB) in the default 1 MiB chunks") {
    const auto results = all_reduce_on_threads<float>(2, 3'000'017, Reduction::sum, options());
    const auto want = reduced(inputs_of<float>(2, 3'000'017), Reduction::sum);
    for (int r = 0; r < 2; ++r) CHECK(differences(results[static_cast<size_t>(r)], want) == "");
  }
}

TEST_CASE("broadcast from a non-zero root, chunked, in place and not; send is read on the root only") {
  const int nranks = 3, root = 2;
  const size_t count = 100;  // 800 bytes: 13 chunks of 64
  const std::string clique = new_clique_name();
  std::vector<std::vector<double>> out_of_place(nranks), in_place(nranks);
  const auto errors = run_ranks(nranks, [&](int r) {
    Endpoint endpoint(clique, nranks, r, options(64));
    endpoint.wait_for_peers();
    std::vector<double> mine = input<double>(r, count);
    auto& recv = out_of_place[static_cast<size_t>(r)];
    recv.assign(count, -1.0);
    endpoint.broadcast(r == root ? mine.data() : nullptr, recv.data(), count, Scalar::float64, root);
    auto& buffer = in_place[static_cast<size_t>(r)];
    buffer = mine;
    endpoint.broadcast(buffer.data(), buffer.data(), count, Scalar::float64, root);
  });
  REQUIRE(errors == no_errors(nranks));
  const auto want = input<double>(root, count);
  for (int r = 0; r < nranks; ++r) {
    INFO("rank " << r);
    CHECK(differences(out_of_place[static_cast<size_t>(r)], want) == "");
    CHECK(differences(in_place[static_cast<size_t>(r)], want) == "");
  }
}

TEST_CASE("a late rank delays the others but the results are right") {
  const int nranks = 3;
  const size_t count = 300;  // 5 chunks of 256 bytes in float32
  const std::string clique = new_clique_name();
  std::vector<std::vector<std::vector<float>>> results(nranks);
  const auto errors = run_ranks(nranks, [&](int r) {
    if (r == 1) std::this_thread::sleep_for(300ms);  // joins late
    Endpoint endpoint(clique, nranks, r, options(256));
    endpoint.wait_for_peers();
    for (int step = 0; step < 6; ++step) {
      if (r == 2 && step == 3) std::this_thread::sleep_for(200ms);  // late to its 4th collective
      std::vector<float> buffer = input<float>(r + step, count);
      endpoint.all_reduce(buffer.data(), buffer.data(), count, Scalar::float32, Reduction::sum);
      results[static_cast<size_t>(r)].push_back(buffer);
    }
    if (endpoint.collectives_run() != 6) throw std::runtime_error("collectives_run() is not 6");
  });
  REQUIRE(errors == no_errors(nranks));
  for (int step = 0; step < 6; ++step) {
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < nranks; ++r) inputs.push_back(input<float>(r + step, count));
    const auto want = reduced(inputs, Reduction::sum);
    for (int r = 0; r < nranks; ++r) {
      INFO("rank " << r << ", collective " << step);
      CHECK(differences(results[static_cast<size_t>(r)][static_cast<size_t>(step)], want) == "");
    }
  }
}

TEST_CASE("the segment's name is removed once every rank has joined, and stays if one never does") {
  const std::string clique = new_clique_name();
  {
    Endpoint first(clique, 2, 0, options());
    CHECK(name_exists(clique));
    Endpoint second(clique, 2, 1, options());
    CHECK_FALSE(name_exists(clique));
    first.wait_for_peers();
    second.wait_for_peers();
  }
  const std::string lonely = new_clique_name();
  {
    Endpoint only(lonely, 2, 0, options());
    CHECK(name_exists(lonely));
  }
  CHECK_FALSE(name_exists(lonely));  // the destructor removed the name of a clique that never formed
}

TEST_CASE("a peer that never joins is a timeout naming it, not a hang") {
  const std::string clique = new_clique_name();
  Endpoint endpoint(clique, 3, 0, options(64, 300ms));
  Endpoint rank2(clique, 3, 2, options(64, 300ms));
  const auto start = std::chrono::steady_clock::now();
  try {
    endpoint.wait_for_peers();
    FAIL("wait_for_peers returned without rank 1");
  } catch (const TransportError& e) {
    CHECK(e.kind == Kind::timeout);
    CHECK_THAT(e.what(), Catch::Contains("rank 0 waited 0.3 s for rank 1 to join clique " + clique) &&
                             Catch::Contains("missing: rank 1 of 3") &&
                             Catch::Contains("EMBER_EMULATED_NCCL_TIMEOUT"));
  }
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  // The failure is sticky, and rank 2 is told at once why the clique failed.
  CHECK_THROWS_WITH(endpoint.wait_for_peers(), Catch::Contains("waited 0.3 s for rank 1"));
  CHECK_THROWS_WITH(rank2.wait_for_peers(), Catch::Contains("rank 2 stops: rank 0 failed the communicator: rank 0 "
                                                            "waited 0.3 s for rank 1"));
}

TEST_CASE("a peer that skips a collective is a timeout naming the collective") {
  const std::string clique = new_clique_name();
  const auto errors = run_ranks(2, [&](int r) {
    Endpoint endpoint(clique, 2, r, options(64, 300ms));
    endpoint.wait_for_peers();
    float x = 1;
    if (r == 0) endpoint.all_reduce(&x, &x, 1, Scalar::float32, Reduction::sum);
    else std::this_thread::sleep_for(1s);  // stays, but never calls all_reduce
  });
  CHECK_THAT(errors[0], Catch::Contains("rank 0 waited 0.3 s for rank 1 (pid ") &&
                            Catch::Contains("to post collective #1: all_reduce(sum, 1 float32), chunk 0"));
  CHECK(errors[1] == "");
}

TEST_CASE("a peer that destroys its endpoint fails the others at once") {
  const std::string clique = new_clique_name();
  std::vector<std::chrono::steady_clock::duration> waited(2);
  const auto errors = run_ranks(2, [&](int r) {
    Endpoint endpoint(clique, 2, r, options(64, 20s));
    endpoint.wait_for_peers();
    if (r == 1) return;  // destroyed without a collective
    const auto start = std::chrono::steady_clock::now();
    try {
      double x = 1;
      endpoint.all_reduce(&x, &x, 1, Scalar::float64, Reduction::sum);
    } catch (const TransportError& e) {
      waited[0] = std::chrono::steady_clock::now() - start;
      if (e.kind != Kind::peer_lost) throw std::runtime_error("expected peer_lost, got: " + std::string(e.what()));
      throw;
    }
  });
  CHECK_THAT(errors[0], Catch::Contains("rank 1 destroyed its communicator while rank 0 waited for it to post "
                                        "collective #1"));
  CHECK(waited[0] < 5s);
}

TEST_CASE("collectives that differ between ranks fail on every rank, naming both") {
  const std::string clique = new_clique_name();
  const auto errors = run_ranks(2, [&](int r) {
    Endpoint endpoint(clique, 2, r, options());
    endpoint.wait_for_peers();
    std::vector<float> x(10, 1.0f);
    if (r == 0) endpoint.all_reduce(x.data(), x.data(), 10, Scalar::float32, Reduction::sum);
    else endpoint.broadcast(x.data(), x.data(), 10, Scalar::float32, 0);
  });
  for (const std::string& e : errors) {
    CHECK_THAT(e, Catch::Contains("collectives do not match") &&
                      Catch::Contains("all_reduce(sum, 10 float32)") && Catch::Contains("broadcast(root 0, 10 float32)"));
  }
  SECTION("the count too") {
    const std::string other = new_clique_name();
    const auto count_errors = run_ranks(2, [&](int r) {
      Endpoint endpoint(other, 2, r, options());
      endpoint.wait_for_peers();
      std::vector<float> x(10, 1.0f);
      endpoint.all_reduce(x.data(), x.data(), r == 0 ? 10 : 9, Scalar::float32, Reduction::sum);
    });
    CHECK_THAT(count_errors[0], Catch::Contains("10 float32") && Catch::Contains("9 float32"));
  }
}

TEST_CASE("ranks that disagree on the clique's shape are usage errors") {
  const std::string clique = new_clique_name();
  Endpoint rank0(clique, 2, 0, options());
  try {
    Endpoint again(clique, 2, 0, options());
    FAIL("a second rank 0 joined");
  } catch (const TransportError& e) {
    CHECK(e.kind == Kind::usage);
    CHECK_THAT(e.what(), Catch::Contains("rank 0 joined clique " + clique + " twice"));
  }
  CHECK_THROWS_WITH(Endpoint(clique, 3, 1, options()), Catch::Contains("expected") && Catch::Contains("disagree"));
  CHECK_THROWS_WITH(Endpoint(clique, 2, 1, options(128)), Catch::Contains("disagree"));
  CHECK_THROWS_WITH(Endpoint(clique, 2, 2, options()), Catch::Contains("rank 2 is out of range for 2 ranks"));
  CHECK_THROWS_WITH(Endpoint(clique, 2, 1, options(100)), Catch::Contains("chunk_bytes 100: expected a multiple of 64"));
  CHECK_THROWS_WITH(Endpoint("no-slash", 1, 0, options()), Catch::Contains("expected \"/name\""));
}

TEST_CASE("clique names are unique") {
  const std::string a = new_clique_name(), b = new_clique_name();
  CHECK(a != b);
  CHECK(a.rfind("/ember-nccl-", 0) == 0);
  CHECK(a.size() < 64);
}

TEST_CASE("ranks in separate processes: chunked sums, average, broadcast, a late rank") {
  const int nranks = 3;
  const std::string clique = new_clique_name();
  const auto statuses = run_ranks_in_processes(nranks, [&](int r) {
    if (r == 2) std::this_thread::sleep_for(200ms);
    Endpoint endpoint(clique, nranks, r, options(4096, 20s));
    endpoint.wait_for_peers();
    int failures = 0;
    auto expect = [&](const std::string& what, const std::string& diff) {
      if (diff.empty()) return;
      std::fprintf(stderr, "rank %d: %s: %s\n", r, what.c_str(), diff.c_str());
      ++failures;
    };
    const size_t count = 100'003;  // 98 chunks of 4 KiB in float32
    std::vector<float> sum = input<float>(r, count);
    endpoint.all_reduce(sum.data(), sum.data(), count, Scalar::float32, Reduction::sum);
    expect("float32 sum", differences(sum, reduced(inputs_of<float>(nranks, count), Reduction::sum)));
    if (r == 0) std::this_thread::sleep_for(200ms);
    std::vector<double> avg(777);
    const std::vector<double> mine = input<double>(r, 777);
    endpoint.all_reduce(mine.data(), avg.data(), 777, Scalar::float64, Reduction::avg);
    expect("float64 avg", differences(avg, reduced(inputs_of<double>(nranks, 777), Reduction::avg)));
    std::vector<int64_t> bcast = input<int64_t>(r, 5000);
    endpoint.broadcast(bcast.data(), bcast.data(), 5000, Scalar::int64, 1);
    expect("int64 broadcast from rank 1", differences(bcast, input<int64_t>(1, 5000)));
    return failures == 0 ? 0 : 1;
  });
  CHECK(statuses == std::vector<int>(nranks, 0));
  CHECK_FALSE(name_exists(clique));
}

TEST_CASE("a peer process that dies fails the others within a second, not at the timeout") {
  const std::string clique = new_clique_name();
  const auto statuses = run_ranks_in_processes(2, [&](int r) {
    Endpoint endpoint(clique, 2, r, options(64, 30s));
    endpoint.wait_for_peers();
    if (r == 1) {
      std::this_thread::sleep_for(100ms);
      raise(SIGKILL);  // a crash: no destructor runs
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      float x = 1;
      endpoint.all_reduce(&x, &x, 1, Scalar::float32, Reduction::sum);
      std::fprintf(stderr, "rank 0: all_reduce returned although rank 1 was killed\n");
      return 1;
    } catch (const TransportError& e) {
      const auto waited = std::chrono::steady_clock::now() - start;
      const bool named = std::string(e.what()).find("rank 1's process (pid ") != std::string::npos &&
                         std::string(e.what()).find(") exited while rank 0 waited for it to post collective #1") !=
                             std::string::npos;
      if (e.kind == Kind::peer_lost && named && waited < 1s) return 0;
      std::fprintf(stderr, "rank 0: after %.3f s: %s\n", std::chrono::duration<double>(waited).count(), e.what());
      return 1;
    }
  });
  CHECK(statuses == std::vector<int>{0, 128 + SIGKILL});
}
