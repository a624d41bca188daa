// The one error of a CUDA entry point in a build without CUDA (EMBER_CUDA=OFF).
// defines: ember::kernels::cuda_not_built, vendor_not_built
#pragma once

namespace ember::kernels {

// Throws ember::Error: "<op>: this build of ember has no CUDA support ...", naming the build
// options that add it. Defined only in a CUDA-off build (kernels/cuda_unavailable.cpp), where
// every kernels::cuda and kernels::vendor entry point calls it.
[[noreturn]] void cuda_not_built(const char* op);

// Throws ember::Error saying that `library` (cuBLAS, cuDNN), which serves `op` under the vendor
// backend (core/backend.h), is not in this build: cuda_not_built's error in a CUDA-off build, the
// emulator's in an emulated one (kernels/cuda/emulator/device/vendor_unavailable.cpp).
[[noreturn]] void vendor_not_built(const char* op, const char* library);

}  // namespace ember::kernels
