// ember's CUDA emulator: the host thread's last error, shared by the launch path and the runtime
// API (cudaGetLastError and friends in runtime.cpp), and where a validated launch goes.
// defines: ember::emu::{record_error, submit_launch}
#pragma once

#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "ember/kernels/cuda/emulator/kernel_model.h"
#include "ember/kernels/cuda/emulator/schedule.h"

namespace ember::emu {

// Records `code` as the host thread's pending error (the first one sticks until
// cudaGetLastError reads it, as in CUDA) and `details` as what cudaGetErrorString(code) says.
void record_error(cudaError_t code, const std::string& details);

// Runs a launch whose configuration launch() has checked, under `order`. Defined twice, and a
// program links one of the two runtimes:
//   inline_runtime.cpp (ember_cuda_emulator): at once, on the calling thread; a fault becomes the
//     thread's last error (tests/cuda_emulated, every kernel alone);
//   device/ (ember_emulated_device, EMBER_CUDA=EMULATED): queued on the launch's stream of an
//     emulated GPU; a fault becomes that device's sticky error.
void submit_launch(const LaunchConfig& config, std::unique_ptr<KernelBody> body, const ScheduleSetting& order);

}  // namespace ember::emu
