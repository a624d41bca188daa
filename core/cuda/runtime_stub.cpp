// core/cuda/runtime.h for a build without CUDA (EMBER_CUDA=OFF or no nvcc): no devices.
#include "common/error.h"
#include "core/cuda/graph.h"
#include "core/cuda/runtime.h"

namespace ember::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(ember::detail::str("cuda: ", what, ": no CUDA support in this build (configured with "
                                 "EMBER_CUDA=OFF or without nvcc)"));
}
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
