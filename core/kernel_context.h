// Where an op's kernels run: the one device-and-stream guard every op uses to call kernels/.
// defines: ember::KernelContext
//
// An op builds one from the tensor it computes on, then makes one device dispatch
// (docs/architecture.md, "One way to write an op"):
//
//   KernelContext on(x);
//   visit_floating(x.dtype(), "relu", [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     if (on.cpu()) kernels::cpu::relu_forward<T>(x.data<T>(), y.data<T>(), n);
//     else if (on.vendor()) kernels::vendor::cudnn_relu_forward<T>(..., on.device(), on.stream());
//     else kernels::cuda::relu_forward<T>(x.data<T>(), y.data<T>(), n, on.stream());
//   });
//
// On a CUDA device it makes the device current for its scope and holds its current stream; on
// the CPU it does nothing. It also fixes the CUDA backend (core/backend.h) when the op runs
// forward: the backward node passes `on.backend()` to its own KernelContext, so a backward
// always runs the kernels of the backend its forward ran, whatever set_backend() says by then.
#pragma once

#include <optional>
#include <vector>

#include "ember/core/backend.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/tensor.h"
#include "ember/kernels/stream.h"

namespace ember {

class KernelContext {
 public:
  // Kernels on `on`'s device, with the backend chosen now (the forward of an op).
  explicit KernelContext(const Tensor& on) : KernelContext(on, ember::backend()) {}
  // Kernels on `on`'s device with a given backend (the backward of an op: its forward's).
  KernelContext(const Tensor& on, Backend backend);
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  bool cpu() const { return device_.is_cpu(); }
  // True on a CUDA device under the vendor backend (cuBLAS / cuDNN kernels).
  bool vendor() const { return !cpu() && backend_ == Backend::Vendor; }
  Backend backend() const { return backend_; }
  Device device() const { return device_; }
  int device_index() const { return device_.index(); }
  kernels::Stream stream() const { return stream_; }

  // Scratch memory for a kernel, valid while this context lives: on the CPU one of a few
  // per-thread buffers, grown only when a call needs more (a training loop of fixed shapes stops
  // allocating after its first step); on CUDA a block of the caching allocator, ordered on
  // stream(). Elements of T; nullptr for 0.
  template <class T>
  T* workspace(int64_t elements) {
    return static_cast<T*>(workspace_bytes(elements * static_cast<int64_t>(sizeof(T))));
  }
  void* workspace_bytes(int64_t bytes);

 private:
  Device device_;
  Backend backend_;
  std::optional<cuda::DeviceGuard> guard_;
  kernels::Stream stream_ = nullptr;
  int cpu_workspaces_ = 0;  // per-thread CPU buffers this context holds (released LIFO)
  std::vector<Tensor> device_workspaces_;
};

}  // namespace ember
