// Kernel launches on the emulated devices: a pointer argument into another device's memory or
// into host memory is an error at launch naming the kernel and the devices (Note [The right
// device] in kernels/cuda/emulator/device/launches.cpp); the vendor backend is absent and
// choosing it is a clear error.
#include <catch2/catch.hpp>

#include <vector>

#include <cuda_runtime_api.h>

#include "ember/core/backend.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/ops.h"
#include "ember/core/tensor.h"
#include "ember/kernels/cuda/copy.h"

using ember::Tensor;

TEST_CASE("a kernel launched while another device is current fails, naming the kernel and both devices") {
  Tensor on1 = ember::zeros({64}, {.device = ember::Device::cuda(1)});
  ember::cuda::synchronize();
  ember::cuda::DeviceGuard wrong(0);  // the bug: no DeviceGuard(1) around a kernel on cuda:1's tensor
  REQUIRE_THROWS_WITH(ember::kernels::cuda::fill(on1.data_ptr(), ember::kernels::kDTypeFloat32, 64, 1.0, nullptr),
                      Catch::Contains("fill_") && Catch::Contains("runs on cuda:0 (the current device)") &&
                          Catch::Contains("points into the memory of cuda:1"));
  {
    ember::cuda::DeviceGuard right(1);
    ember::kernels::cuda::fill(on1.data_ptr(), ember::kernels::kDTypeFloat32, 64, 1.0, nullptr);
  }
  CHECK(ember::allclose(on1.cpu(), ember::ones({64}), 0, 0));
}

TEST_CASE("a kernel given a host pointer fails at launch") {
  std::vector<float> host(64);
  REQUIRE_THROWS_WITH(ember::kernels::cuda::fill(host.data(), ember::kernels::kDTypeFloat32, 64, 1.0, nullptr),
                      Catch::Contains("points to host memory"));
}

TEST_CASE("a kernel launched on another device's stream fails") {
  cudaStream_t on1 = nullptr;
  {
    ember::cuda::DeviceGuard one(1);
    REQUIRE(cudaStreamCreateWithFlags(&on1, cudaStreamNonBlocking) == cudaSuccess);
  }
  Tensor t = ember::zeros({8}, {.device = ember::Device::cuda(0)});
  REQUIRE_THROWS_WITH(ember::kernels::cuda::fill(t.data_ptr(), ember::kernels::kDTypeFloat32, 8, 1.0, on1),
                      Catch::Contains("launched on a stream of cuda:1 while cuda:0 is current"));
  cudaStreamDestroy(on1);
}

TEST_CASE("the vendor backend is not emulated: choosing it is a clear error") {
  Tensor x = ember::randn({4, 4}).cuda();
  ember::BackendGuard vendor(ember::Backend::Vendor);
  REQUIRE_THROWS_WITH(ember::matmul(x, x), Catch::Contains("the vendor backend (cuBLAS) is not available in an emulated CUDA build"));
}
