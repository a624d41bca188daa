// ember's CUDA emulator: the host thread's last error, shared by the launch path and the runtime
// API (cudaGetLastError and friends in runtime.cpp).
// defines: ember::emu::record_error
#pragma once

#include <string>

#include <cuda_runtime_api.h>

namespace ember::emu {

// Records `code` as the host thread's pending error (the first one sticks until
// cudaGetLastError reads it, as in CUDA) and `details` as what cudaGetErrorString(code) says.
void record_error(cudaError_t code, const std::string& details);

}  // namespace ember::emu
