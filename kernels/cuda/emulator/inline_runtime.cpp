// The emulator's inline runtime (ember_cuda_emulator): every launch runs to completion on the
// calling host thread, so synchronising only reports errors. Tests of each kernel alone
// (tests/cuda_emulated) link it; the emulated device (device/) is the other runtime.
#include "ember/kernels/cuda/emulator/block_runner.h"
#include "ember/kernels/cuda/emulator/runtime.h"

namespace ember::emu {

void submit_launch(const LaunchConfig& config, std::unique_ptr<KernelBody> body, const ScheduleSetting& order) {
  try {
    run_grid(config, *body, order);
  } catch (const KernelFault& fault) {
    record_error(fault.code, fault.what());
  }
}

}  // namespace ember::emu

cudaError_t cudaDeviceSynchronize() { return cudaPeekAtLastError(); }

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaPeekAtLastError(); }
