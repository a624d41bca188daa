// The CUDA runtime calls of kernels/cuda/emulator/include/cuda_runtime_api.h: error state per host
// thread, and synchronisation (a no-op: emulated kernels finish inside their launch).
#include "kernels/cuda/emulator/runtime.h"

namespace ember::emu {

namespace {

struct ErrorState {
  cudaError_t pending = cudaSuccess;
  cudaError_t detailed_code = cudaSuccess;  // the code `details` describes
  std::string details;
  std::string message;  // the string cudaGetErrorString last returned for detailed_code
};

ErrorState& error_state() {
  thread_local ErrorState state;
  return state;
}

}  // namespace

void record_error(cudaError_t code, const std::string& details) {
  ErrorState& s = error_state();
  if (s.pending == cudaSuccess) s.pending = code;
  s.detailed_code = code;
  s.details = details;
}

}  // namespace ember::emu

cudaError_t cudaGetLastError() {
  auto& s = ember::emu::error_state();
  const cudaError_t e = s.pending;
  s.pending = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return ember::emu::error_state().pending; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define EMBER_EMU_NAME(code) \
  case code: return #code;
    EMBER_EMU_NAME(cudaSuccess)
    EMBER_EMU_NAME(cudaErrorInvalidValue)
    EMBER_EMU_NAME(cudaErrorMemoryAllocation)
    EMBER_EMU_NAME(cudaErrorInitializationError)
    EMBER_EMU_NAME(cudaErrorInvalidConfiguration)
    EMBER_EMU_NAME(cudaErrorInsufficientDriver)
    EMBER_EMU_NAME(cudaErrorNoDevice)
    EMBER_EMU_NAME(cudaErrorInvalidDevice)
    EMBER_EMU_NAME(cudaErrorInvalidResourceHandle)
    EMBER_EMU_NAME(cudaErrorNotReady)
    EMBER_EMU_NAME(cudaErrorIllegalAddress)
    EMBER_EMU_NAME(cudaErrorLaunchOutOfResources)
    EMBER_EMU_NAME(cudaErrorLaunchTimeout)
    EMBER_EMU_NAME(cudaErrorAssert)
    EMBER_EMU_NAME(cudaErrorHardwareStackError)
    EMBER_EMU_NAME(cudaErrorIllegalInstruction)
    EMBER_EMU_NAME(cudaErrorMisalignedAddress)
    EMBER_EMU_NAME(cudaErrorInvalidAddressSpace)
    EMBER_EMU_NAME(cudaErrorInvalidPc)
    EMBER_EMU_NAME(cudaErrorLaunchFailure)
    EMBER_EMU_NAME(cudaErrorNotSupported)
    EMBER_EMU_NAME(cudaErrorStreamCaptureUnsupported)
    EMBER_EMU_NAME(cudaErrorStreamCaptureInvalidated)
    EMBER_EMU_NAME(cudaErrorUnknown)
#undef EMBER_EMU_NAME
  }
  return "cudaErrorUnrecognized";
}

namespace {

// The toolkit's wording for the codes ember meets.
const char* generic_string(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorLaunchTimeout: return "the launch timed out and was terminated";
    case cudaErrorNotSupported: return "operation not supported";
    default: return cudaGetErrorName(error);
  }
}

}  // namespace

const char* cudaGetErrorString(cudaError_t error) {
  auto& s = ember::emu::error_state();
  if (error != cudaSuccess && error == s.detailed_code && !s.details.empty()) {
    s.message = std::string(generic_string(error)) + " [ember CUDA emulator: " + s.details + "]";
    return s.message.c_str();
  }
  return generic_string(error);
}

cudaError_t cudaDeviceSynchronize() { return cudaPeekAtLastError(); }

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaPeekAtLastError(); }
