// ember::emu::launch: what a <<<grid, block, shared, stream>>> launch does on the emulator. The
// configuration is checked against sm_90's limits first (a GPU refuses a bad one at launch, and
// so does this); then the runtime linked in runs the grid (runtime.h, submit_launch), and a
// fault becomes a CUDA error, which EMBER_CUDA_LAUNCH_CHECK or the next synchronising call turns
// into ember::Error.
#include <cstdint>
#include <string>

#include "ember/kernels/cuda/emulator/block_runner.h"
#include "ember/kernels/cuda/emulator/runtime.h"

namespace ember::emu {

namespace {

// sm_90 (H100/H200): compute capability 9.0's limits.
constexpr uint64_t kMaxThreadsPerBlock = 1024;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr uint64_t kMaxGridDim[3] = {2147483647ull, 65535, 65535};
// Dynamic shared memory above 48 KiB needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize), up to
// 227 KiB; ember never opts in, so a launch asking for more than 48 KiB fails as it would on a GPU.
constexpr size_t kDefaultDynamicSharedBytes = 48 << 10;

std::string dims(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// Empty when the configuration is valid, else why not.
std::string configuration_problem(const LaunchConfig& c) {
  const unsigned block[3] = {c.block.x, c.block.y, c.block.z};
  const unsigned grid[3] = {c.grid.x, c.grid.y, c.grid.z};
  for (int d = 0; d < 3; ++d) {
    if (block[d] == 0 || block[d] > kMaxBlockDim[d]) {
      return "block " + dims(c.block) + ": each dimension must be 1.." + std::to_string(kMaxBlockDim[d]);
    }
    if (grid[d] == 0 || grid[d] > kMaxGridDim[d]) {
      return "grid " + dims(c.grid) + ": dimension " + std::to_string(d) + " must be 1.." +
             std::to_string(kMaxGridDim[d]);
    }
  }
  const uint64_t threads = static_cast<uint64_t>(c.block.x) * c.block.y * c.block.z;
  if (threads > kMaxThreadsPerBlock) {
    return "block " + dims(c.block) + " has " + std::to_string(threads) + " threads, more than " +
           std::to_string(kMaxThreadsPerBlock);
  }
  return "";
}

}  // namespace

void launch(const LaunchConfig& config, std::unique_ptr<KernelBody> body) {
  const std::string where =
      "kernel " + std::string(config.kernel) + " (launched at " + short_site(config.file, config.line) + "): ";
  const std::string problem = configuration_problem(config);
  if (!problem.empty()) {
    record_error(cudaErrorInvalidConfiguration, where + problem);
    return;
  }
  if (config.dynamic_shared_bytes > kDefaultDynamicSharedBytes) {
    record_error(cudaErrorInvalidValue, where + std::to_string(config.dynamic_shared_bytes) +
                                            " bytes of dynamic shared memory, more than the " +
                                            std::to_string(kDefaultDynamicSharedBytes) +
                                            " a launch gets without opting in");
    return;
  }
  ScheduleSetting order;
  try {
    order = schedule();
  } catch (const std::invalid_argument& bad_setting) {  // EMBER_EMU_SCHEDULE
    record_error(cudaErrorInvalidValue, where + bad_setting.what());
    return;
  }
  submit_launch(config, std::move(body), order);
}

}  // namespace ember::emu
