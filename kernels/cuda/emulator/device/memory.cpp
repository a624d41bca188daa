// The emulated GPUs' memory (memory.h). Each device's arena is one anonymous mapping of
// EMBER_EMULATED_MEMORY bytes (default 2G, reserved, not committed), carved first-fit into
// 256-byte aligned allocations, each followed by a 256-byte gap that AddressSanitizer, when
// built in, keeps unaddressable, so a kernel that runs past its buffer is reported.
#include "ember/kernels/cuda/emulator/device/memory.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "ember/kernels/cuda/emulator/device/device.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMBER_EMU_DEVICE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define EMBER_EMU_DEVICE_ASAN 1
#endif
#if defined(EMBER_EMU_DEVICE_ASAN)
#include <sanitizer/asan_interface.h>
#define EMBER_EMU_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define EMBER_EMU_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define EMBER_EMU_POISON(p, n) ((void)(p), (void)(n))
#define EMBER_EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ember::emu::device {

namespace {

constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees
constexpr size_t kGap = 256;        // unaddressable bytes after each allocation (AddressSanitizer)

// A setting of the emulated device, or a message on stderr and the end of the process: a test
// run that silently fell back to other settings would prove nothing.
template <class F>
auto setting(const char* variable, F parse) {
  try {
    return parse(std::getenv(variable));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember emulated CUDA: %s\n", e.what());
    std::abort();
  }
}

struct Arena {
  char* base = nullptr;
  size_t size = 0;
  size_t free_bytes = 0;
  std::map<size_t, size_t> free_ranges;  // offset -> length, coalesced
  std::map<size_t, size_t> live;         // offset -> bytes asked for
};

struct Memory {
  std::mutex mutex;  // guards the arenas' maps and `pinned`
  std::vector<Arena> arenas;  // one per device; base and size never change
  std::map<const char*, size_t> pinned;
  bool strict = true;
  std::mutex access_mutex;
  int access_holders = 0;
  struct sigaction previous_segv {};
};

void on_segv(int, siginfo_t*, void*);

Memory& memory() {
  static Memory* instance = [] {
    auto* m = new Memory();  // never destroyed: streams may run device work during exit
    const int count = device_count();
    const size_t bytes = setting("EMBER_EMULATED_MEMORY", [](const char* v) {
      return v ? parse_bytes(v, "EMBER_EMULATED_MEMORY") : size_t{2} << 30;
    });
    m->strict = setting("EMBER_EMULATED_STRICT", [](const char* v) {
      if (v == nullptr || std::string_view(v) == "1") return true;
      if (std::string_view(v) == "0") return false;
      throw std::invalid_argument("EMBER_EMULATED_STRICT must be 0 or 1, got \"" + std::string(v) + "\"");
    });
    for (int d = 0; d < count; ++d) {
      const int access = m->strict ? PROT_NONE : PROT_READ | PROT_WRITE;
      void* base = mmap(nullptr, bytes, access, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) {
        std::fprintf(stderr, "ember emulated CUDA: cannot reserve %zu bytes for cuda:%d: %s\n", bytes, d,
                     std::strerror(errno));
        std::abort();
      }
      Arena arena;
      arena.base = static_cast<char*>(base);
      arena.size = bytes;
      arena.free_bytes = bytes;
      arena.free_ranges[0] = bytes;
      m->arenas.push_back(std::move(arena));
    }
    if (m->strict) {
      struct sigaction action {};
      action.sa_sigaction = on_segv;
      action.sa_flags = SA_SIGINFO | SA_ONSTACK;
      sigemptyset(&action.sa_mask);
      sigaction(SIGSEGV, &action, &m->previous_segv);
    }
    return m;
  }();
  return *instance;
}

// Note [Host access to device memory]: in strict mode the arenas have no access rights while no
// worker runs device work, so host code that dereferences a device pointer faults. The handler
// names the device, then restores the previous handler and returns: the access faults again
// under it (AddressSanitizer's report with the host stack, or the default core dump).
void on_segv(int, siginfo_t* info, void* context) {
  Memory& m = memory();
  const char* address = static_cast<const char*>(info->si_addr);
  for (size_t d = 0; d < m.arenas.size(); ++d) {
    const Arena& arena = m.arenas[d];
    if (address < arena.base || address >= arena.base + arena.size) continue;
    const auto* uc = static_cast<const ucontext_t*>(context);
    const bool wrote = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
    char message[512];
    const int n = std::snprintf(
        message, sizeof message,
        "ember emulated CUDA: host code %s device memory: address %p is %zu bytes into cuda:%zu's "
        "memory. A device pointer was dereferenced on the host; copy the tensor to the CPU first "
        "(.cpu(), .item()). (EMBER_EMULATED_STRICT=1 maps device memory only while a stream runs "
        "device work.)\n",
        wrote ? "wrote to" : "read", static_cast<const void*>(address), static_cast<size_t>(address - arena.base), d);
    if (n > 0) (void)!write(STDERR_FILENO, message, static_cast<size_t>(n));
    break;
  }
  sigaction(SIGSEGV, &m.previous_segv, nullptr);
}

}  // namespace

size_t parse_bytes(std::string_view text, const char* variable) {
  size_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = -1;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  if (error != std::errc() || shift < 0 || value == 0 || value > (size_t{1} << 40) >> shift) {
    throw std::invalid_argument(std::string(variable) + " must be a size such as 512M, 2G or 1048576 (at most 1T), got \"" +
                                std::string(text) + "\"");
  }
  return value << shift;
}

bool strict_mode() { return memory().strict; }

int arena_of(const void* ptr) {
  Memory& m = memory();
  const char* p = static_cast<const char*>(ptr);
  for (size_t d = 0; d < m.arenas.size(); ++d) {
    if (p >= m.arenas[d].base && p < m.arenas[d].base + m.arenas[d].size) return static_cast<int>(d);
  }
  return -1;
}

Place locate(const void* ptr, size_t bytes, bool* inside) {
  Memory& m = memory();
  const char* p = static_cast<const char*>(ptr);
  bool in = false;
  Place place;
  std::lock_guard lock(m.mutex);
  if (int d = arena_of(ptr); d >= 0) {
    const Arena& arena = m.arenas[d];
    place = Place{PlaceKind::Device, d, nullptr, 0};
    const size_t offset = static_cast<size_t>(p - arena.base);
    if (auto it = arena.live.upper_bound(offset); it != arena.live.begin()) {
      --it;
      if (offset < it->first + std::max<size_t>(it->second, 1)) {
        place.base = arena.base + it->first;
        place.size = it->second;
        in = offset + bytes <= it->first + it->second;
      }
    }
  } else if (auto it = m.pinned.upper_bound(p); it != m.pinned.begin() && p < std::prev(it)->first + std::prev(it)->second) {
    --it;
    place = Place{PlaceKind::Pinned, -1, it->first, it->second};
    in = p + bytes <= it->first + it->second;
  } else {
    in = true;  // pageable host memory: the host's own business
  }
  if (inside) *inside = in;
  return place;
}

void* allocate(int device, size_t bytes, std::string& why) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  Arena& arena = m.arenas.at(static_cast<size_t>(device));
  const size_t need = (bytes + kAlignment - 1) / kAlignment * kAlignment + kGap;
  size_t largest = 0;
  for (auto it = arena.free_ranges.begin(); it != arena.free_ranges.end(); ++it) {
    largest = std::max(largest, it->second);
    if (it->second < need) continue;
    const size_t offset = it->first, length = it->second;
    arena.free_ranges.erase(it);
    if (length > need) arena.free_ranges[offset + need] = length - need;
    arena.live[offset] = bytes;
    arena.free_bytes -= need;
    char* p = arena.base + offset;
    EMBER_EMU_UNPOISON(p, bytes);
    EMBER_EMU_POISON(p + bytes, need - bytes);
    return p;
  }
  why = "cuda:" + std::to_string(device) + " has " + std::to_string(arena.free_bytes) + " bytes free of " +
        std::to_string(arena.size) + " (the largest free range is " + std::to_string(largest) +
        " bytes; EMBER_EMULATED_MEMORY sets the size)";
  return nullptr;
}

bool release(void* ptr) {
  Memory& m = memory();
  const int d = arena_of(ptr);
  if (d < 0) return false;
  std::lock_guard lock(m.mutex);
  Arena& arena = m.arenas[d];
  size_t offset = static_cast<size_t>(static_cast<char*>(ptr) - arena.base);
  auto it = arena.live.find(offset);
  if (it == arena.live.end()) return false;
  size_t length = (it->second + kAlignment - 1) / kAlignment * kAlignment + kGap;
  arena.live.erase(it);
  arena.free_bytes += length;
  EMBER_EMU_POISON(arena.base + offset, length);
  // Coalesce with the free neighbours.
  auto next = arena.free_ranges.lower_bound(offset);
  if (next != arena.free_ranges.end() && next->first == offset + length) {
    length += next->second;
    next = arena.free_ranges.erase(next);
  }
  if (next != arena.free_ranges.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      previous->second += length;
      return true;
    }
  }
  arena.free_ranges[offset] = length;
  return true;
}

void memory_info(int device, size_t& free_bytes, size_t& total_bytes) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const Arena& arena = m.arenas.at(static_cast<size_t>(device));
  free_bytes = arena.free_bytes;
  total_bytes = arena.size;
}

void* allocate_pinned(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 1)) != 0) return nullptr;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.pinned[static_cast<const char*>(p)] = std::max<size_t>(bytes, 1);
  return p;
}

bool release_pinned(void* ptr) {
  Memory& m = memory();
  {
    std::lock_guard lock(m.mutex);
    if (m.pinned.erase(static_cast<const char*>(ptr)) == 0) return false;
  }
  std::free(ptr);
  return true;
}

DeviceAccess::DeviceAccess() {
  Memory& m = memory();
  if (!m.strict) return;
  std::lock_guard lock(m.access_mutex);
  if (m.access_holders++ == 0) {
    for (Arena& arena : m.arenas) mprotect(arena.base, arena.size, PROT_READ | PROT_WRITE);
  }
}

DeviceAccess::~DeviceAccess() {
  Memory& m = memory();
  if (!m.strict) return;
  std::lock_guard lock(m.access_mutex);
  if (--m.access_holders == 0) {
    for (Arena& arena : m.arenas) mprotect(arena.base, arena.size, PROT_NONE);
  }
}

int device_count() {
  static const int count = setting("EMBER_EMULATED_GPUS", [](const char* v) {
    if (v == nullptr) return 2;
    int n = -1;
    std::string_view text(v);
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (error != std::errc() || end != text.data() + text.size() || n < 0 || n > 16) {
      throw std::invalid_argument("EMBER_EMULATED_GPUS must be a number of devices 0..16, got \"" +
                                  std::string(text) + "\"");
    }
    return n;
  });
  return count;
}

int device_of(const void* ptr, size_t bytes) {
  bool inside = false;
  Place place = locate(ptr, bytes, &inside);
  return place.kind == PlaceKind::Device && inside ? place.device : -1;
}

}  // namespace ember::emu::device
