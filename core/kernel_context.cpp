#include "ember/core/kernel_context.h"

#include <cstddef>
#include <vector>

#include "ember/common/error.h"

namespace ember {

KernelContext::KernelContext(const Tensor& on, Backend backend) : device_(on.device()), backend_(backend) {
  if (device_.is_cuda()) {
    guard_.emplace(device_.index());
    stream_ = cuda::current_stream(device_.index());
  }
}

namespace {

// The calling thread's CPU workspaces. Contexts live on the stack, so they take buffers from
// the top and give them back in reverse order; a nested op's context never reuses a buffer its
// caller still holds.
struct CpuWorkspaces {
  std::vector<std::vector<std::max_align_t>> buffers;  // max_align_t: aligned for any T
  size_t in_use = 0;
};
thread_local CpuWorkspaces cpu_workspaces;

}  // namespace

KernelContext::~KernelContext() { cpu_workspaces.in_use -= static_cast<size_t>(cpu_workspaces_); }

void* KernelContext::workspace_bytes(int64_t bytes) {
  EMBER_CHECK(bytes >= 0, "workspace: negative size ", bytes);
  if (bytes == 0) return nullptr;
  if (cpu()) {
    CpuWorkspaces& pool = cpu_workspaces;
    if (pool.buffers.size() <= pool.in_use) pool.buffers.resize(pool.in_use + 1);
    std::vector<std::max_align_t>& buffer = pool.buffers[pool.in_use++];
    ++cpu_workspaces_;
    const size_t elements = (static_cast<size_t>(bytes) + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
    if (buffer.size() < elements) buffer.resize(elements);
    return buffer.data();
  }
  device_workspaces_.push_back(empty({bytes}, {.dtype = kUInt8, .device = device_}));
  return device_workspaces_.back().data_ptr();
}

}  // namespace ember
