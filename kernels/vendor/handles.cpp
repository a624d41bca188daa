// Per-thread, per-device cuBLAS and cuDNN handles.
#include "ember/kernels/vendor/handles.h"

#include <unordered_map>

#include "ember/kernels/vendor/check.h"

namespace ember::kernels::vendor {

namespace {

// Owns one thread's handles; destroying them at thread exit needs a live driver, which a process
// at exit may no longer have, so failures there are ignored.
struct ThreadHandles {
  std::unordered_map<int, cublasHandle_t> cublas;
  std::unordered_map<int, cudnnHandle_t> cudnn;
  ~ThreadHandles() {
    for (auto& [device, handle] : cublas) cublasDestroy(handle);
    for (auto& [device, handle] : cudnn) cudnnDestroy(handle);
  }
};

ThreadHandles& thread_handles() {
  thread_local ThreadHandles handles;
  return handles;
}

}  // namespace

cublasHandle_t cublas_handle(int device, cudaStream_t stream) {
  auto& handles = thread_handles().cublas;
  auto it = handles.find(device);
  if (it == handles.end()) {
    cublasHandle_t handle = nullptr;
    EMBER_CUBLAS_CHECK(cublasCreate(&handle));
    // The default math mode keeps FP32 in FP32 (no TF32 rounding), so the vendor path is a
    // true FP32 reference for the hand-written kernels.
    it = handles.emplace(device, handle).first;
  }
  EMBER_CUBLAS_CHECK(cublasSetStream(it->second, stream));
  return it->second;
}

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
  auto& handles = thread_handles().cudnn;
  auto it = handles.find(device);
  if (it == handles.end()) {
    cudnnHandle_t handle = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreate(&handle));
    it = handles.emplace(device, handle).first;
  }
  EMBER_CUDNN_CHECK(cudnnSetStream(it->second, stream));
  return it->second;
}

}  // namespace ember::kernels::vendor
