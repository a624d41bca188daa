// The current stream of each device, and a guard that switches the current device.
// defines: ember::cuda::current_stream, set_current_stream, DeviceGuard
#pragma once

#include <cuda_runtime_api.h>

namespace ember::cuda {

// The stream ember's kernels and copies on `device` are queued on. Starts as the legacy default
// stream (0), which orders all work on the device without extra synchronisation.
cudaStream_t current_stream(int device);
void set_current_stream(int device, cudaStream_t stream);

// Makes `device` current for its scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace ember::cuda
