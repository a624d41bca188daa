// Kernel launches on the emulated GPUs (runtime.h's submit_launch for EMBER_CUDA=EMULATED): the
// launch is checked against the device it runs on, then queued on its stream, whose worker runs
// the grid (block_runner.h). A fault inside the kernel becomes the device's sticky error,
// reported by the next synchronising call, as on a GPU.
//
// Note [The right device]: a kernel runs on the current device, and a GPU faults (without peer
// access) or silently reads across the bus (with it) when a pointer argument lies in another
// device's memory. Here it is an error at launch naming the kernel and both devices: the bug of
// a launch made without a cuda::DeviceGuard for its tensors' device.
#include <memory>
#include <string>

#include "ember/kernels/cuda/emulator/block_runner.h"
#include "ember/kernels/cuda/emulator/device/device.h"
#include "ember/kernels/cuda/emulator/device/memory.h"
#include "ember/kernels/cuda/emulator/device/streams.h"
#include "ember/kernels/cuda/emulator/runtime.h"

namespace ember::emu {

void submit_launch(const LaunchConfig& config, std::unique_ptr<KernelBody> body, const ScheduleSetting& order) {
  const int device = device::current_device();
  const std::string kernel =
      "kernel " + std::string(config.kernel) + " (launched at " + short_site(config.file, config.line) + ")";
  const int stream_device = device::stream_device(config.stream);
  if (stream_device < 0) {
    device::fail(cudaErrorInvalidResourceHandle, kernel + ": its stream does not exist (destroyed?)");
    return;
  }
  if (stream_device != device) {
    device::fail(cudaErrorInvalidResourceHandle, kernel + ": launched on a stream of cuda:" + std::to_string(stream_device) +
                                                     " while cuda:" + std::to_string(device) + " is current");
    return;
  }
  for (const auto& [position, address] : body->pointer_arguments()) {
    const device::Place place = device::locate(address, 1);
    const std::string argument = "argument " + std::to_string(position) + " (" +
                                 std::to_string(reinterpret_cast<uintptr_t>(address)) + ")";
    if (place.kind == device::PlaceKind::Device && place.device != device) {
      device::fail(cudaErrorIllegalAddress, kernel + " runs on cuda:" + std::to_string(device) + " (the current device), but its " +
                                                argument + " points into the memory of cuda:" +
                                                std::to_string(place.device) + "; make cuda:" +
                                                std::to_string(place.device) + " current (cuda::DeviceGuard) to run it there");
      return;
    }
    if (place.kind == device::PlaceKind::Pageable) {
      device::fail(cudaErrorIllegalAddress, kernel + " runs on cuda:" + std::to_string(device) + ", but its " + argument +
                                                " points to host memory, which a GPU cannot read");
      return;
    }
  }
  std::shared_ptr<KernelBody> shared(std::move(body));
  device::enqueue_work(config.stream, device::Work{config.kernel, [config, shared, order] { run_grid(config, *shared, order); }});
}

}  // namespace ember::emu
