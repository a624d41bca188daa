// safetensors files: round trips, corrupt files, and atomic writes.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/module.h"

using ember::Tensor;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("ember-ckpt-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string with_header(const std::string& json, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + json + data;
}

}  // namespace

TEST_CASE("write_safetensors and read_safetensors round-trip every dtype") {
  fs::path path = temp_dir() / "all.safetensors";
  std::map<std::string, Tensor> in{{"f", ember::randn({2, 3})},
                                   {"d", ember::randn({4}, {.dtype = ember::kFloat64})},
                                   {"i", ember::arange(5)},
                                   {"u", ember::ones({3}, {.dtype = ember::kUInt8})},
                                   {"t", ember::randn({3, 2}).t()}};
  ember::nn::write_safetensors(path, in, {{"format", "pt"}});
  auto out = ember::nn::read_safetensors(path);
  REQUIRE(out.size() == in.size());
  for (auto& [name, t] : in) {
    CHECK(out.at(name).dtype() == t.dtype());
    CHECK(ember::allclose(out.at(name), t, 0, 0));
  }
}

TEST_CASE("corrupt safetensors files fail with errors naming the file and the place") {
  fs::path dir = temp_dir();
  auto read = [&](const std::string& name, const std::string& bytes) {
    write_bytes(dir / name, bytes);
    return ember::nn::read_safetensors(dir / name);
  };
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir / "missing.safetensors"), Catch::Contains("cannot open"));
  REQUIRE_THROWS_WITH(read("short", "abc"), Catch::Contains("shorter than the 8-byte header length"));
  REQUIRE_THROWS_WITH(read("long-header", with_header("{}").substr(0, 8) + std::string(1, 'x')),
                      Catch::Contains("header length at byte 0"));
  REQUIRE_THROWS_WITH(read("bad-json", with_header("{not json")), Catch::Contains("corrupt JSON header"));
  REQUIRE_THROWS_WITH(read("no-fields", with_header(R"({"w": {"dtype": "F32"}})")),
                      Catch::Contains("tensor \"w\" needs \"dtype\", \"shape\""));
  REQUIRE_THROWS_WITH(read("dtype", with_header(R"({"w": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}})", "xxxx")),
                      Catch::Contains("unsupported dtype Q7"));
  REQUIRE_THROWS_WITH(read("truncated", with_header(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", "xxxx")),
                      Catch::Contains("tensor \"w\" has data_offsets [0, 16] outside the 4 data bytes"));
  REQUIRE_THROWS_WITH(read("size", with_header(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", "xxxx")),
                      Catch::Contains("has 4 data bytes at file byte") && Catch::Contains("but shape [2] of float32 needs 8"));
}

TEST_CASE("a failed save leaves the previous checkpoint intact and no temporary file behind") {
  fs::path dir = temp_dir() / "atomic";
  fs::create_directories(dir);
  fs::path path = dir / "model.safetensors";
  ember::nn::write_safetensors(path, {{"w", ember::ones({3})}});
  // An undefined tensor makes the second save fail after it has started.
  REQUIRE_THROWS_WITH(ember::nn::write_safetensors(path, {{"a", ember::zeros({3})}, {"b", Tensor()}}),
                      Catch::Contains("tensor \"b\" is undefined"));
  auto kept = ember::nn::read_safetensors(path);
  CHECK(ember::allclose(kept.at("w"), ember::ones({3})));
  int files = 0;
  for ([[maybe_unused]] auto& entry : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
}

TEST_CASE("more corrupt headers: not an object, bad offsets, bad shapes, not a file") {
  fs::path dir = temp_dir();
  auto read = [&](const std::string& name, const std::string& bytes) {
    write_bytes(dir / name, bytes);
    return ember::nn::read_safetensors(dir / name);
  };
  REQUIRE_THROWS_WITH(read("array", with_header("[1, 2]")), Catch::Contains("the header at byte 8 is not a JSON object"));
  REQUIRE_THROWS_WITH(read("offsets-type", with_header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": ["a", 4]}})", "xxxx")),
                      Catch::Contains("tensor \"w\" has data_offsets [\"a\",4] that are not two non-negative integers"));
  REQUIRE_THROWS_WITH(read("offsets-negative", with_header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", "xxxx")),
                      Catch::Contains("not two non-negative integers"));
  REQUIRE_THROWS_WITH(read("offsets-reversed", with_header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", "xxxx")),
                      Catch::Contains("has data_offsets [4, 0]"));
  REQUIRE_THROWS_WITH(read("shape-negative", with_header(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "xxxx")),
                      Catch::Contains("tensor \"w\" has an invalid shape [-1]"));
  REQUIRE_THROWS_WITH(read("shape-huge", with_header(R"({"w": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", "xxxx")),
                      Catch::Contains("too large to address"));
  REQUIRE_THROWS_WITH(read("offsets-one", with_header(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "xxxx")),
                      Catch::Contains("a two-element \"data_offsets\""));
  REQUIRE_THROWS_WITH(read("dtype-f16", with_header(R"({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", "xxxx")),
                      Catch::Contains("unsupported dtype F16"));
  std::string name = (dir / "short").string();
  REQUIRE_THROWS_WITH(read("short", "abc"), Catch::Contains(name));
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir), Catch::Contains("not a regular file"));
  // A header that points at the second tensor's bytes from the right place reads fine.
  auto ok = read("two", with_header(R"({"__metadata__": {"format": "pt"}, "a": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},)"
                                    R"( "b": {"dtype": "BOOL", "shape": [2], "data_offsets": [3, 5]}})", std::string("\x01\x02\x03\x01\x00", 5)));
  CHECK(ok.at("a").at<uint8_t>({2}) == 3);
  CHECK(ok.at("b").dtype() == ember::kBool);
}

TEST_CASE("a save that fails mid-write (file size limit) keeps the old file and removes the temporary") {
  fs::path dir = temp_dir() / "midwrite";
  fs::create_directories(dir);
  fs::path path = dir / "model.safetensors";
  ember::nn::write_safetensors(path, {{"w", ember::ones({3})}});
  // RLIMIT_FSIZE makes write() fail with EFBIG part of the way through (even as root).
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ::getrlimit(RLIMIT_FSIZE, &old);
  rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string message;
  try {
    ember::nn::write_safetensors(path, {{"big", ember::zeros({100000})}});
  } catch (const ember::Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, SIG_DFL);
  CHECK_THAT(message, Catch::StartsWith("write_safetensors: writing") && Catch::Contains("failed"));
  CHECK(ember::allclose(ember::nn::read_safetensors(path).at("w"), ember::ones({3})));
  int files = 0;
  for ([[maybe_unused]] auto& entry : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  // And a folder that does not exist: nothing is created, the error names the path.
  REQUIRE_THROWS_WITH(ember::nn::write_safetensors(dir / "nope" / "m.safetensors", {{"w", ember::ones({1})}}),
                      Catch::Contains("cannot create a temporary file beside"));
}

TEST_CASE("saved files are readable by others (0644), like any file the user saves") {
  fs::path path = temp_dir() / "perm.safetensors";
  ember::nn::write_safetensors(path, {{"w", ember::ones({1})}});
  auto perms = fs::status(path).permissions();
  CHECK((perms & fs::perms::others_read) != fs::perms::none);
}

// Issue 20, point 2: read_safetensors throws ember::Error and nothing else, whatever the bytes.
TEST_CASE("a header number out of range (nlohmann's out_of_range) is an ember::Error naming the file") {
  fs::path dir = temp_dir();
  write_bytes(dir / "huge-number", with_header("1e400"));
  REQUIRE_THROWS_AS(ember::nn::read_safetensors(dir / "huge-number"), ember::Error);
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir / "huge-number"),
                      Catch::Contains((dir / "huge-number").string()) && Catch::Contains("corrupt JSON header"));
  write_bytes(dir / "huge-dim", with_header(R"({"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})", "xxxx"));
  REQUIRE_THROWS_AS(ember::nn::read_safetensors(dir / "huge-dim"), ember::Error);
}

TEST_CASE("a safetensors shape whose strides overflow is rejected by the checked size computation") {
  fs::path dir = temp_dir();
  write_bytes(dir / "zero-overflow",
              with_header(R"({"w": {"dtype": "F32", "shape": [0, 4611686018427387904, 4611686018427387904], "data_offsets": [0, 0]}})"));
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir / "zero-overflow"),
                      Catch::Contains("tensor \"w\"") && Catch::Contains("too large to address"));
}

TEST_CASE("a header nested too deeply is an ember::Error, not a stack overflow") {
  fs::path dir = temp_dir();
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  write_bytes(dir / "deep-root", with_header(deep));
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir / "deep-root"), Catch::Contains("nested deeper than"));
  write_bytes(dir / "deep-shape", with_header(R"({"w": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 4]}})", "xxxx"));
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(dir / "deep-shape"), Catch::Contains("nested deeper than"));
}

TEST_CASE("a tensor name that is not UTF-8 fails the save with an ember::Error and no file") {
  fs::path dir = temp_dir() / "utf8";
  fs::create_directories(dir);
  REQUIRE_THROWS_WITH(ember::nn::write_safetensors(dir / "m.safetensors", {{"bad\xff", ember::ones({1})}}),
                      Catch::StartsWith("write_safetensors: ") && Catch::Contains("UTF-8"));
  CHECK(fs::is_empty(dir));
}

// Issue 16: an error begins with the public function the user called, not the one it calls.
TEST_CASE("checkpoint errors begin with the function the user called") {
  fs::path dir = temp_dir() / "prefixes";
  fs::create_directories(dir);
  const std::string missing = (dir / "missing.safetensors").string();
  REQUIRE_THROWS_WITH(ember::nn::read_safetensors(missing), Catch::StartsWith("read_safetensors: cannot open " + missing));
  ember::nn::Module model;  // the file fails before any parameter is looked at
  REQUIRE_THROWS_WITH(ember::load(model, missing), Catch::StartsWith("load: cannot open " + missing));
  write_bytes(dir / "bad-json", with_header("{not json"));
  REQUIRE_THROWS_WITH(ember::load(model, (dir / "bad-json").string()), Catch::StartsWith("load: ") && Catch::Contains("corrupt JSON header"));
  const std::string nowhere = (dir / "nope" / "m.safetensors").string();
  REQUIRE_THROWS_WITH(ember::nn::write_safetensors(nowhere, {{"w", ember::ones({1})}}),
                      Catch::StartsWith("write_safetensors: cannot create a temporary file beside"));
  REQUIRE_THROWS_WITH(ember::save(model, nowhere), Catch::StartsWith("save: cannot create a temporary file beside"));
}

// Issue 20, point 4: temporaries of a save killed part of the way are removed by the next save.
TEST_CASE("a save removes stale temporaries of the same checkpoint and nothing else") {
  fs::path dir = temp_dir() / "stale";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::string> stale{".model.safetensors.tmp-a1B2c3", ".model.safetensors.tmp-ZZZZZZ"};
  const std::vector<std::string> others{".model.safetensors.tmp-abc12",    // 5 characters, not mkstemp's 6
                                        ".model.safetensors.tmp-abc123.x", "model.safetensors.tmp-abc123",
                                        ".other.safetensors.tmp-abc123", ".model.safetensors.tmp-ab_123",
                                        "notes.txt"};
  for (const auto& name : stale) write_bytes(dir / name, "partial");
  for (const auto& name : others) write_bytes(dir / name, "keep");
  ember::nn::write_safetensors(dir / "model.safetensors", {{"w", ember::ones({2})}});
  for (const auto& name : stale) CHECK_FALSE(fs::exists(dir / name));
  for (const auto& name : others) CHECK(fs::exists(dir / name));
  CHECK(ember::allclose(ember::nn::read_safetensors(dir / "model.safetensors").at("w"), ember::ones({2})));
}

TEST_CASE("a save leaves alone the temporary of a save still running (it holds a lock on it)") {
  fs::path dir = temp_dir() / "live";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path live = dir / ".model.safetensors.tmp-L1v3ab";
  write_bytes(live, "being written");
  // flock locks belong to the open file, so a second open in this process conflicts as another
  // process's would.
  const int fd = ::open(live.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  ember::nn::write_safetensors(dir / "model.safetensors", {{"w", ember::ones({2})}});
  CHECK(fs::exists(live));
  ::close(fd);
  ember::nn::write_safetensors(dir / "model.safetensors", {{"w", ember::ones({2})}});
  CHECK_FALSE(fs::exists(live));
}
