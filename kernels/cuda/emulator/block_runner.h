// ember's CUDA emulator: runs the blocks of a launch, each CUDA thread a fiber, in the order the
// schedule gives, and implements __syncthreads and the warp collectives between the fibers.
// Raises, as a KernelFault naming the kernel, its launch site, the block and the barrier's
// file:line, what would hang or misbehave on a GPU: a barrier that only some threads of a block
// reach (the others returned or wait at another barrier), a warp collective whose mask names a
// lane that exited or waits elsewhere, lanes of one collective that disagree on the mask or the
// operation, and any state in which no thread can run.
// defines: ember::emu::{KernelFault, run_grid}
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

#include "ember/kernels/cuda/emulator/kernel_model.h"
#include "ember/kernels/cuda/emulator/schedule.h"

namespace ember::emu {

struct KernelFault : std::runtime_error {
  KernelFault(cudaError_t c, const std::string& message) : std::runtime_error(message), code(c) {}
  cudaError_t code;
};

// Runs every thread of every block of `config` on the calling host thread. Throws KernelFault.
// The configuration must already be valid (launch.cpp checks it).
void run_grid(const LaunchConfig& config, KernelBody& body, const ScheduleSetting& schedule);

// "kernels/cuda/gemm.cu:120" from an absolute __FILE__ path and a line.
std::string short_site(const char* file, unsigned line);

}  // namespace ember::emu
