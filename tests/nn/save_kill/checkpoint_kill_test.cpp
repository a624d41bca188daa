// A saving process killed with SIGKILL at random moments (issue 20, point 4): after every kill the
// checkpoint loads completely, as the last finished save or the one being written, and at most one
// temporary file is left beside it; the next save removes that one.
//
// Run without arguments, this is the test (the `checkpoint_kill` ctest). With `--save-loop DIR
// STEP` it is the child: it says "ready" on stdout, then saves the checkpoint of STEP, STEP + 1,
// ... into DIR until it is killed, writing each step to stdout once its save has returned. The
// kill comes a random time after "ready", up to a few times one save's duration as measured here
// (so the kills land inside saves with or without sanitizers). EMBER_KILL_SEED repeats a run.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/checkpoint.h"

namespace fs = std::filesystem;
using ember::Tensor;

namespace {

constexpr int kKills = 40;
constexpr int kSavesPerDelay = 4;  // the longest delay before a kill, in save durations
const std::string kName = "model.safetensors";
const std::string kTempPrefix = "." + kName + ".tmp-";

// Two tensors that must agree: a save cut in the middle could not pass for a complete one. 2 MiB,
// so that many kills land while the data is being written.
std::map<std::string, Tensor> checkpoint_of(int64_t step) {
  return {{"step", ember::tensor(std::vector<int64_t>{step})},
          {"w", ember::full({512, 1024}, static_cast<double>(step))}};
}

int save_loop(const fs::path& dir, int64_t first_step) {
  std::printf("ready\n");
  std::fflush(stdout);
  for (int64_t step = first_step;; ++step) {
    ember::nn::write_safetensors(dir / kName, checkpoint_of(step));
    std::printf("%lld\n", static_cast<long long>(step));
    std::fflush(stdout);
  }
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "checkpoint_kill: FAILED: %s\n", message.c_str());
  std::exit(1);
}

// The step of the checkpoint in `dir`, after checking that it loads and is whole.
int64_t load_step(const fs::path& dir) {
  std::map<std::string, Tensor> loaded;
  try {
    loaded = ember::nn::read_safetensors(dir / kName);
  } catch (const ember::Error& e) {
    fail(std::string("the checkpoint does not load: ") + e.what());
  }
  if (loaded.size() != 2 || !loaded.count("step") || !loaded.count("w")) fail("the checkpoint lacks a tensor");
  const int64_t step = loaded.at("step").at<int64_t>({0});
  if (!ember::allclose(loaded.at("w"), checkpoint_of(step).at("w"), 0, 0)) {
    fail("the checkpoint of step " + std::to_string(step) + " holds another step's weights");
  }
  return step;
}

// Temporaries of the checkpoint; fails on any other file beside it.
int count_temporaries(const fs::path& dir) {
  int temporaries = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTempPrefix, 0) == 0) {
      ++temporaries;
    } else if (name != kName) {
      fail("an unexpected file " + name + " is beside the checkpoint");
    }
  }
  return temporaries;
}

// Starts a child saving from `first_step`; its stdout is the returned pipe's read end.
pid_t start_saver(const fs::path& dir, int64_t first_step, int& output) {
  int fds[2];
  if (::pipe(fds) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  const std::string dir_arg = dir.string(), step_arg = std::to_string(first_step);
  const char* args[] = {"checkpoint_kill_test", "--save-loop", dir_arg.c_str(), step_arg.c_str(), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv("/proc/self/exe", const_cast<char* const*>(args));
    ::_exit(127);
  }
  ::close(fds[1]);
  output = fds[0];
  return pid;
}

// Blocks until the child has said "ready" (it is running, its libraries loaded).
void wait_until_ready(int output) {
  std::string line;
  char c = 0;
  while (line != "ready\n") {
    if (::read(output, &c, 1) != 1) fail("the saving child ended before it was ready");
    line += c;
  }
}

// The last step a killed child reported as saved, or -1.
int64_t last_reported(int output) {
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(output, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  ::close(output);
  const size_t end = text.find_last_of('\n');
  if (end == std::string::npos) return -1;
  const size_t begin = text.find_last_of('\n', end - 1);
  return std::stoll(text.substr(begin == std::string::npos ? 0 : begin + 1, end));
}

// How long one save takes here, in microseconds (the slowest of three).
int64_t save_duration_us(const fs::path& dir) {
  int64_t slowest = 0;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ember::nn::write_safetensors(dir / kName, checkpoint_of(0));
    const auto took = std::chrono::steady_clock::now() - start;
    slowest = std::max<int64_t>(slowest, std::chrono::duration_cast<std::chrono::microseconds>(took).count());
  }
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--save-loop") return save_loop(argv[2], std::stoll(argv[3]));

  const char* seed_text = std::getenv("EMBER_KILL_SEED");
  const unsigned seed = seed_text != nullptr ? static_cast<unsigned>(std::stoul(seed_text)) : std::random_device{}();
  std::mt19937 random(seed);
  const fs::path dir = fs::temp_directory_path() / ("ember-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  const int64_t max_delay_us = kSavesPerDelay * save_duration_us(dir);  // also leaves step 0 saved
  std::uniform_int_distribution<int64_t> delay_us(0, max_delay_us);
  int64_t step = 0;
  int killed_mid_save = 0, steps_saved = 0;
  for (int kill = 1; kill <= kKills; ++kill) {
    int output = -1;
    const pid_t child = start_saver(dir, step + 1, output);
    wait_until_ready(output);
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(random)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFSIGNALED(status)) fail("the saving child exited by itself (status " + std::to_string(status) + ")");
    // Saved for sure: the last step reported; perhaps also the one after it (killed between its
    // rename and its report).
    const int64_t reported = std::max(step, last_reported(output));
    const int64_t loaded = load_step(dir);
    if (loaded != reported && loaded != reported + 1) {
      fail("kill " + std::to_string(kill) + ": the checkpoint holds step " + std::to_string(loaded) +
           ", expected step " + std::to_string(reported) + " or " + std::to_string(reported + 1));
    }
    const int temporaries = count_temporaries(dir);
    if (temporaries > 1) fail("kill " + std::to_string(kill) + " left " + std::to_string(temporaries) + " temporaries");
    killed_mid_save += temporaries;
    steps_saved += static_cast<int>(loaded - step);
    step = loaded;
  }
  // A save that finishes removes the temporary the last kill may have left.
  ember::nn::write_safetensors(dir / kName, checkpoint_of(step + 1));
  if (count_temporaries(dir) != 0 || load_step(dir) != step + 1) fail("the final save left a temporary or lost data");
  fs::remove_all(dir);
  std::printf("checkpoint_kill: %d kills (seed %u, delays up to %.1f ms): %d inside a save's write, %d saves "
              "completed in between; the checkpoint loaded whole after every kill, never more than one temporary\n",
              kKills, seed, static_cast<double>(max_delay_us) / 1000, killed_mid_save, steps_saved);
  return 0;
}
