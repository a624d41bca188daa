// Multi-tensor SGD: each launch carries up to kSgdTensorsPerLaunch tensors' pointers and a table
// mapping each block to (tensor, chunk); a block updates kSgdChunk elements of its tensor.
#include "ember/kernels/cuda/sgd.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "ember/common/cuda_check.h"
#include "ember/common/error.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 512;

template <class T>
struct SgdLaunchArgs {
  T* param[kSgdTensorsPerLaunch];
  const T* grad[kSgdTensorsPerLaunch];
  T* momentum[kSgdTensorsPerLaunch];
  int64_t numel[kSgdTensorsPerLaunch];
  uint8_t first_step[kSgdTensorsPerLaunch];
  uint8_t block_tensor[kSgdBlocksPerLaunch];  // slot in the arrays above
  int32_t block_chunk[kSgdBlocksPerLaunch];   // chunk of that tensor
};
static_assert(kSgdTensorsPerLaunch <= 256, "block_tensor is a uint8_t");
static_assert(sizeof(SgdLaunchArgs<double>) + 64 <= 4096, "kernel arguments must stay under 4 KiB");

struct SgdCoefficients {
  bool momentum, weight_decay, nesterov;
};

// Rounded operations: nvcc would otherwise contract a * b + c into one fma.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

template <class T>
__global__ void sgd_update_kernel(SgdLaunchArgs<T> args, T lr, T mom, T damp, T wd, SgdCoefficients c) {
  const int slot = args.block_tensor[blockIdx.x];
  const int64_t begin = static_cast<int64_t>(args.block_chunk[blockIdx.x]) * kSgdChunk;
  const int64_t n = args.numel[slot];
  const int64_t end = begin + kSgdChunk < n ? begin + kSgdChunk : n;
  T* p = args.param[slot];
  const T* g = args.grad[slot];
  T* buf = args.momentum[slot];
  const bool first_step = args.first_step[slot] != 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    T d = g[i];
    const T value = p[i];
    if (c.weight_decay) d = add_rn(d, mul_rn(wd, value));
    if (c.momentum) {
      const T b = first_step ? d : add_rn(mul_rn(mom, buf[i]), mul_rn(damp, d));
      buf[i] = b;
      d = c.nesterov ? add_rn(d, mul_rn(mom, b)) : b;
    }
    p[i] = sub_rn(value, mul_rn(lr, d));
  }
}

}  // namespace

template <class T>
void sgd_update_multi(const SgdTensor<T>* tensors, size_t count, const SgdHyper& hyper, cudaStream_t stream) {
  // The CPU kernel's coefficients, rounded to T the same way.
  const T lr = T(hyper.lr), mom = T(hyper.momentum), damp = T(1.0 - hyper.dampening), wd = T(hyper.weight_decay);
  const SgdCoefficients c{hyper.momentum != 0.0, hyper.weight_decay != 0.0, hyper.nesterov};
  SgdLaunchArgs<T> args{};
  int slots = 0, blocks = 0;
  size_t slot_owner = std::numeric_limits<size_t>::max();  // which tensor the last slot holds
  auto launch = [&] {
    if (blocks > 0) {
      EMBER_LAUNCH(blocks, kThreads, 0, stream, sgd_update_kernel<T>)(args, lr, mom, damp, wd, c);
      EMBER_CUDA_LAUNCH_CHECK("sgd_update");
    }
    args = SgdLaunchArgs<T>{};
    slots = blocks = 0;
    slot_owner = std::numeric_limits<size_t>::max();
  };
  for (size_t k = 0; k < count; ++k) {
    const SgdTensor<T>& t = tensors[k];
    if (t.numel <= 0) continue;
    const int64_t chunks = (t.numel + kSgdChunk - 1) / kSgdChunk;
    EMBER_CHECK(chunks <= std::numeric_limits<int32_t>::max(), "sgd_update: a parameter of ", t.numel,
                " elements is too large");
    EMBER_CHECK(!c.momentum || t.momentum_buffer != nullptr, "sgd_update: momentum ", hyper.momentum,
                " needs a momentum buffer for every parameter");
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      if (blocks == kSgdBlocksPerLaunch) launch();
      if (slot_owner != k) {  // first chunk of this tensor in the current launch
        if (slots == kSgdTensorsPerLaunch) launch();
        args.param[slots] = t.param;
        args.grad[slots] = t.grad;
        args.momentum[slots] = t.momentum_buffer;
        args.numel[slots] = t.numel;
        args.first_step[slots] = t.first_step ? 1 : 0;
        ++slots;
        slot_owner = k;
      }
      args.block_tensor[blocks] = static_cast<uint8_t>(slots - 1);
      args.block_chunk[blocks] = static_cast<int32_t>(chunk);
      ++blocks;
    }
  }
  launch();
}

template void sgd_update_multi<float>(const SgdTensor<float>*, size_t, const SgdHyper&, cudaStream_t);
template void sgd_update_multi<double>(const SgdTensor<double>*, size_t, const SgdHyper&, cudaStream_t);

}  // namespace ember::kernels::cuda
