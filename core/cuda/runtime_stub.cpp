// core/cuda/runtime.h and stream.h for a build without CUDA (EMBER_CUDA=OFF or no nvcc): no
// devices, so whatever needs one throws.
#include "ember/common/error.h"
#include "ember/core/cuda/graph.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/kernels/cuda_unavailable.h"

namespace ember::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) { kernels::cuda_not_built(what); }
}  // namespace

bool is_available() noexcept { return false; }
int device_count() noexcept { return 0; }
std::vector<Device> devices() { return {}; }
void synchronize(int) { no_cuda("synchronize"); }
bool is_capturing(int) noexcept { return false; }
MemoryStats memory_stats(int) { no_cuda("memory_stats"); }
void empty_cache() {}
void set_poison_allocations(bool) {}

struct Graph::State {};
Graph::Graph(int device) : device_(device) { no_cuda("Graph"); }
Graph::~Graph() = default;
void Graph::capture(const std::function<void()>&) { no_cuda("Graph::capture"); }
void Graph::replay() { no_cuda("Graph::replay"); }
bool Graph::captured() const { return false; }

Stream current_stream(int) { no_cuda("current_stream"); }
void set_current_stream(int, Stream) { no_cuda("set_current_stream"); }
DeviceGuard::DeviceGuard(int) { no_cuda("DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;
Event::Event(int device, bool) : device_(device) { no_cuda("Event"); }
Event::~Event() = default;
void Event::record(Stream) { no_cuda("Event::record"); }
void Event::wait(Stream) const { no_cuda("Event::wait"); }
void Event::synchronize() const { no_cuda("Event::synchronize"); }
bool Event::query() const { no_cuda("Event::query"); }
float Event::elapsed_ms(const Event&) const { no_cuda("Event::elapsed_ms"); }

namespace detail {
void* allocate(size_t, int) { no_cuda("allocate"); }
void deallocate(void*) noexcept {}
void copy_host_to_device(void*, const void*, size_t, int) { no_cuda("copy to device"); }
void copy_device_to_host(void*, const void*, size_t, int) { no_cuda("copy to host"); }
void copy_device_to_device(void*, int, const void*, int, size_t) { no_cuda("copy between devices"); }
void fill_zero(void*, size_t, int) { no_cuda("fill"); }
void* allocate_pinned(size_t) { no_cuda("pinned host memory"); }
void free_pinned(void*) noexcept {}
}  // namespace detail
}  // namespace ember::cuda
