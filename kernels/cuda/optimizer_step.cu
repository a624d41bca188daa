// Multi-tensor apply: each launch carries up to kOptimizerTensorsPerLaunch tensors (pointers,
// sizes, per-tensor coefficients) and a table mapping each block to (tensor, chunk); a block
// applies the optimizer's rule to kOptimizerChunk elements of its tensor.
#include "ember/kernels/cuda/optimizer_step.h"

#include <cstdint>
#include <limits>

#include "ember/common/cuda_check.h"
#include "ember/common/error.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {
namespace {

constexpr int kThreads = 512;

template <class T>
struct MultiTensorArgs {
  OptimizerTensor<T> tensor[kOptimizerTensorsPerLaunch];
  uint8_t block_tensor[kOptimizerBlocksPerLaunch];  // slot in tensor[]
  int32_t block_chunk[kOptimizerBlocksPerLaunch];   // chunk of that tensor
};
static_assert(kOptimizerTensorsPerLaunch <= 256, "block_tensor is a uint8_t");
// The rule rides in the same argument block: the largest (AdamRule<double>) is under 96 bytes.
static_assert(sizeof(MultiTensorArgs<double>) + 96 <= 4096, "kernel arguments must stay under 4 KiB");

template <class T, class Rule>
__global__ void multi_tensor_kernel(MultiTensorArgs<T> args, Rule rule) {
  const OptimizerTensor<T>& t = args.tensor[args.block_tensor[blockIdx.x]];
  const int64_t begin = static_cast<int64_t>(args.block_chunk[blockIdx.x]) * kOptimizerChunk;
  const int64_t end = begin + kOptimizerChunk < t.numel ? begin + kOptimizerChunk : t.numel;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) rule(t, i);
}

template <class T, class Rule>
void multi_tensor_apply(const char* op, const OptimizerTensor<T>* tensors, size_t count, const Rule& rule,
                        cudaStream_t stream) {
  MultiTensorArgs<T> args{};
  int slots = 0, blocks = 0;
  size_t slot_owner = std::numeric_limits<size_t>::max();  // which tensor the last slot holds
  auto launch = [&] {
    if (blocks > 0) {
      EMBER_LAUNCH(blocks, kThreads, 0, stream, multi_tensor_kernel<T, Rule>)(args, rule);
      EMBER_CUDA_LAUNCH_CHECK(op);
    }
    args = MultiTensorArgs<T>{};
    slots = blocks = 0;
    slot_owner = std::numeric_limits<size_t>::max();
  };
  for (size_t k = 0; k < count; ++k) {
    const OptimizerTensor<T>& t = tensors[k];
    if (t.numel <= 0) continue;
    const int64_t chunks = (t.numel + kOptimizerChunk - 1) / kOptimizerChunk;
    EMBER_CHECK(chunks <= std::numeric_limits<int32_t>::max(), op, ": a parameter of ", t.numel,
                " elements is too large");
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      if (blocks == kOptimizerBlocksPerLaunch) launch();
      if (slot_owner != k) {  // first chunk of this tensor in the current launch
        if (slots == kOptimizerTensorsPerLaunch) launch();
        args.tensor[slots++] = t;
        slot_owner = k;
      }
      args.block_tensor[blocks] = static_cast<uint8_t>(slots - 1);
      args.block_chunk[blocks] = static_cast<int32_t>(chunk);
      ++blocks;
    }
  }
  launch();
}

}  // namespace

template <class T>
void sgd_step(const OptimizerTensor<T>* tensors, size_t count, const SgdRule<T>& rule, cudaStream_t stream) {
  multi_tensor_apply("sgd_step", tensors, count, rule, stream);
}
template <class T>
void adam_step(const OptimizerTensor<T>* tensors, size_t count, const AdamRule<T>& rule, cudaStream_t stream) {
  multi_tensor_apply("adam_step", tensors, count, rule, stream);
}
template <class T>
void rmsprop_step(const OptimizerTensor<T>* tensors, size_t count, const RmspropRule<T>& rule, cudaStream_t stream) {
  multi_tensor_apply("rmsprop_step", tensors, count, rule, stream);
}
template <class T>
void adagrad_step(const OptimizerTensor<T>* tensors, size_t count, const AdagradRule<T>& rule, cudaStream_t stream) {
  multi_tensor_apply("adagrad_step", tensors, count, rule, stream);
}

#define EMBER_INSTANTIATE(T)                                                                               \
  template void sgd_step<T>(const OptimizerTensor<T>*, size_t, const SgdRule<T>&, cudaStream_t);          \
  template void adam_step<T>(const OptimizerTensor<T>*, size_t, const AdamRule<T>&, cudaStream_t);        \
  template void rmsprop_step<T>(const OptimizerTensor<T>*, size_t, const RmspropRule<T>&, cudaStream_t);  \
  template void adagrad_step<T>(const OptimizerTensor<T>*, size_t, const AdagradRule<T>&, cudaStream_t);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cuda
