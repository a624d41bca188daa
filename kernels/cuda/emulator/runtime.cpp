// The CUDA runtime calls that both of the emulator's runtimes share (runtime.h): the error state
// per host thread, cudaGetLastError, cudaGetErrorString and cudaGetErrorName.
#include "ember/kernels/cuda/emulator/runtime.h"

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
    EMBER_EMU_NAME(cudaErrorInvalidDevicePointer)
    EMBER_EMU_NAME(cudaErrorInvalidMemcpyDirection)
    EMBER_EMU_NAME(cudaErrorInsufficientDriver)
    EMBER_EMU_NAME(cudaErrorNoDevice)
    EMBER_EMU_NAME(cudaErrorInvalidDevice)
    EMBER_EMU_NAME(cudaErrorInvalidResourceHandle)
    EMBER_EMU_NAME(cudaErrorIllegalState)
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
    EMBER_EMU_NAME(cudaErrorStreamCaptureUnjoined)
    EMBER_EMU_NAME(cudaErrorStreamCaptureIsolation)
    EMBER_EMU_NAME(cudaErrorStreamCaptureImplicit)
    EMBER_EMU_NAME(cudaErrorCapturedEvent)
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
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnjoined: return "capture was not joined back to the origin stream";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
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

