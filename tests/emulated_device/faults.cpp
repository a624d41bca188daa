// Planted bugs that end the process, one per run (tests/emulated_device/CMakeLists.txt): the
// emulated device must report each one, naming what went wrong, before the process stops.
//   host_read      host code reads a device tensor's memory through its pointer (strict mode)
//   host_write     host code writes to it
//   kernel_fault   a kernel with a barrier in divergent code; the fault surfaces at the next
//                  synchronisation, which names the last op launched
//   freed_pinned   a pinned buffer freed while an asynchronous copy still reads it
//                  (AddressSanitizer builds)
#include <cstdio>
#include <cstring>
#include <string>

#include <cuda_runtime.h>

#include "ember/common/cuda_check.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/tensor.h"
#include "ember/kernels/cuda/launch.cuh"

namespace {

__global__ void planted_divergent_barrier(float* out) {
  if (threadIdx.x < 16) __syncthreads();  // the other half of the block never arrives
  out[threadIdx.x] = 1.0f;
}

int host_read() {
  ember::Tensor t = ember::ones({1000}, {.device = ember::Device::cuda(1)});
  ember::cuda::synchronize();
  const float* p = t.data<float>();
  std::printf("read %f\n", static_cast<double>(p[10]));  // a device pointer dereferenced on the host
  return 1;
}

int host_write() {
  ember::Tensor t = ember::zeros({1000}, {.device = ember::Device::cuda(0)});
  ember::cuda::synchronize();
  t.data<float>()[3] = 2.0f;
  return 1;
}

int kernel_fault() {
  ember::Tensor out = ember::zeros({32}, {.device = ember::Device::cuda(0)});
  EMBER_LAUNCH(1, 32, 0, nullptr, planted_divergent_barrier)(out.data<float>());
  EMBER_CUDA_LAUNCH_CHECK("planted_divergent_barrier");  // the launch itself is fine
  try {
    ember::cuda::synchronize(0);
  } catch (const std::exception& e) {
    std::printf("%s\n", e.what());
  }
  return 1;
}

int freed_pinned() {
  void* pinned = nullptr;
  EMBER_CUDA_CHECK(cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocDefault));
  std::memset(pinned, 1, 1 << 20);
  ember::Tensor t = ember::empty({1 << 18}, {.device = ember::Device::cuda(0)});
  ember::Tensor busy = ember::ones({1 << 22}, {.device = ember::Device::cuda(0)});  // the stream is busy for a while
  EMBER_CUDA_CHECK(cudaMemcpyAsync(t.data_ptr(), pinned, 1 << 20, cudaMemcpyHostToDevice, nullptr));
  EMBER_CUDA_CHECK(cudaFreeHost(pinned));  // the copy may not have run yet: no event waited for
  ember::cuda::synchronize(0);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string bug = argc == 2 ? argv[1] : "";
  if (bug == "host_read") return host_read();
  if (bug == "host_write") return host_write();
  if (bug == "kernel_fault") return kernel_fault();
  if (bug == "freed_pinned") return freed_pinned();
  std::fprintf(stderr, "usage: %s host_read|host_write|kernel_fault|freed_pinned\n", argv[0]);
  return 2;
}
