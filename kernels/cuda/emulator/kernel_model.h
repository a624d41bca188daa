// ember's CUDA emulator, device side: the CUDA execution model as host C++, so that the unchanged
// kernels/cuda/*.cu compile with g++ or clang and run on the CPU. Each CUDA thread of a block runs
// as a fiber (block_runner.h); built-in variables are per-fiber; __shared__ variables are shared
// by the fibers of a block; barriers and warp collectives switch fibers.
// defines: the qualifiers (__global__ __device__ __host__ __shared__ __forceinline__ __align__
//          __launch_bounds__ __restrict__), threadIdx blockIdx blockDim gridDim warpSize, the
//          vector types ember uses (float2/4, double2, int2/4) and make_*, __ldg, the _rn
//          arithmetic, the bit casts, __syncthreads, __syncwarp, __shfl*_sync, __ballot_sync,
//          __any_sync, __all_sync, and ember::emu::make_launch (EMBER_LAUNCH's expansion).
//
// Note [Adding a kernel]: a new kernel needs nothing here unless it uses an intrinsic that is not
// defined below; add that intrinsic (with a test in tests/cuda_emulated/test_emulator.cpp).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_runtime_api.h"

// --- Qualifiers --------------------------------------------------------------------------------
// Every emulated CUDA thread of a block runs on the same host thread, one at a time, so a
// `static thread_local` is exactly one copy per block in flight: CUDA's __shared__.
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __grid_constant__

// --- Vector types ----------------------------------------------------------------------------------
// The toolkit's alignment, and a check in every copy: a vector load or store through a misaligned
// pointer faults on a GPU (cudaErrorMisalignedAddress), and here the copy that performs it raises
// that fault, naming the kernel, the thread, the address and, for a load, its line. (UBSan's
// -fsanitize=alignment, on for the emulated kernels, catches it first under g++; clang copies
// structs without checking, and its aligned SSE moves would crash instead.)
namespace ember::emu {
// Raises the fault (block_runner.cpp); out of line, as only a misaligned access reaches it.
[[noreturn]] void report_misaligned_vector(const void* address, size_t alignment, const char* type, const char* access,
                                           const char* file, unsigned line);
// Inline, since every vector copy of every emulated thread runs it.
inline void check_vector_access(const void* address, size_t alignment, const char* type, const char* access,
                                const char* file, unsigned line) {
  // Hidden from the optimiser: inlined into float4's own copy, `address` is `this`, which the
  // compiler may assume 16-byte aligned and fold the test away (clang does).
  uintptr_t bits = reinterpret_cast<uintptr_t>(address);
  asm("" : "+r"(bits));
  if (bits % alignment != 0) [[unlikely]] {
    report_misaligned_vector(address, alignment, type, access, file, line);
  }
}
}  // namespace ember::emu

#define EMBER_EMU_CALLER const char *file = __builtin_FILE(), unsigned line = __builtin_LINE()

#define EMBER_EMU_CHECKED_COPIES(Name)                                                              \
  Name() = default;                                                                                 \
  Name(const Name& other, EMBER_EMU_CALLER) {                                                       \
    ::ember::emu::check_vector_access(&other, alignof(Name), #Name, "load from", file, line);       \
    std::memcpy(static_cast<void*>(this), &other, sizeof(Name));                                    \
  }                                                                                                 \
  Name& operator=(const Name& other) {                                                              \
    ::ember::emu::check_vector_access(this, alignof(Name), #Name, "store to", nullptr, 0);          \
    ::ember::emu::check_vector_access(&other, alignof(Name), #Name, "load from", nullptr, 0);       \
    std::memcpy(static_cast<void*>(this), &other, sizeof(Name));                                    \
    return *this;                                                                                   \
  }

struct alignas(8) float2 {
  float x, y;
  constexpr float2(float vx, float vy) : x(vx), y(vy) {}
  EMBER_EMU_CHECKED_COPIES(float2)
};
struct alignas(16) float4 {
  float x, y, z, w;
  constexpr float4(float vx, float vy, float vz, float vw) : x(vx), y(vy), z(vz), w(vw) {}
  EMBER_EMU_CHECKED_COPIES(float4)
};
struct alignas(16) double2 {
  double x, y;
  constexpr double2(double vx, double vy) : x(vx), y(vy) {}
  EMBER_EMU_CHECKED_COPIES(double2)
};
struct alignas(8) int2 {
  int x, y;
  constexpr int2(int vx, int vy) : x(vx), y(vy) {}
  EMBER_EMU_CHECKED_COPIES(int2)
};
struct alignas(16) int4 {
  int x, y, z, w;
  constexpr int4(int vx, int vy, int vz, int vw) : x(vx), y(vy), z(vz), w(vw) {}
  EMBER_EMU_CHECKED_COPIES(int4)
};
#undef EMBER_EMU_CHECKED_COPIES

inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }

// --- Built-in variables: set by the block runner each time it resumes a thread ------------------
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

// --- Intrinsics ---------------------------------------------------------------------------------
// Read-only cache loads are plain loads here.
template <class T>
__forceinline__ T __ldg(const T* p, EMBER_EMU_CALLER) {
  if constexpr (std::is_trivially_copyable_v<T>) return *p;
  else return T(*p, file, line);  // a vector type: its copy checks the alignment
}

// The _rn forms exist so that nvcc does not fuse them into an FMA. The emulated library is built
// with -ffp-contract=off, so host arithmetic is never fused: these are the plain operations.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

// CUDA's integer min/max (math_functions.h), for the integer types device code mixes.
#define EMBER_EMU_MIN_MAX(T)                                  \
  inline T min(T a, T b) { return b < a ? b : a; }           \
  inline T max(T a, T b) { return a < b ? b : a; }
EMBER_EMU_MIN_MAX(int)
EMBER_EMU_MIN_MAX(unsigned)
EMBER_EMU_MIN_MAX(long)
EMBER_EMU_MIN_MAX(unsigned long)
EMBER_EMU_MIN_MAX(long long)
EMBER_EMU_MIN_MAX(unsigned long long)
#undef EMBER_EMU_MIN_MAX

inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline float __uint_as_float(unsigned v) { return std::bit_cast<float>(v); }
inline unsigned __float_as_uint(float v) { return std::bit_cast<unsigned>(v); }
inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }
inline long long __double_as_longlong(double v) { return std::bit_cast<long long>(v); }

namespace ember::emu {

// A barrier or warp collective, where it was called from (for the fault messages).
struct CallSite {
  const char* function;
  const char* file;
  unsigned line;
};
// The intrinsics take their caller's file and line as the defaulted __builtin_FILE() and
// __builtin_LINE() arguments of EMBER_EMU_CALLER (std::source_location needs clang 15; Debian's
// default is 14).

enum class WarpOp : uint8_t { Sync, ShuffleIdx, ShuffleUp, ShuffleDown, ShuffleXor, Ballot, Any, All };

// What one lane brings to a warp collective; the runner fills `result` once every lane named in
// `mask` has arrived (block_runner.cpp, complete_warp_op).
struct WarpRequest {
  WarpOp op;
  unsigned mask;
  int operand;  // source lane, delta or lane mask; the predicate for Ballot/Any/All
  int width;
  uint64_t value;
  uint64_t result;
};

// Blocks the calling emulated thread until every thread of its block arrives (block_runner.cpp).
void block_barrier(const CallSite& site);
// Blocks the calling lane until every lane of `request.mask` arrives; returns request.result.
uint64_t warp_collective(WarpRequest request, const CallSite& site);

// A value of at most 8 bytes carried through a collective as raw bits.
template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>,
                "warp shuffles carry values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
T shuffle(WarpOp op, unsigned mask, T v, int operand, int width, const CallSite& site) {
  return from_bits<T>(warp_collective({op, mask, operand, width, to_bits(v), 0}, site));
}

}  // namespace ember::emu

inline void __syncthreads(EMBER_EMU_CALLER) {
  ember::emu::block_barrier({"__syncthreads", file, line});
}
inline void __syncwarp(unsigned mask = 0xffffffffu, EMBER_EMU_CALLER) {
  ember::emu::warp_collective({ember::emu::WarpOp::Sync, mask, 0, warpSize, 0, 0}, {"__syncwarp", file, line});
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize, EMBER_EMU_CALLER) {
  return ember::emu::shuffle(ember::emu::WarpOp::ShuffleIdx, mask, v, src_lane, width, {"__shfl_sync", file, line});
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize, EMBER_EMU_CALLER) {
  return ember::emu::shuffle(ember::emu::WarpOp::ShuffleUp, mask, v, static_cast<int>(delta), width,
                             {"__shfl_up_sync", file, line});
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize, EMBER_EMU_CALLER) {
  return ember::emu::shuffle(ember::emu::WarpOp::ShuffleDown, mask, v, static_cast<int>(delta), width,
                             {"__shfl_down_sync", file, line});
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize, EMBER_EMU_CALLER) {
  return ember::emu::shuffle(ember::emu::WarpOp::ShuffleXor, mask, v, lane_mask, width,
                             {"__shfl_xor_sync", file, line});
}
inline unsigned __ballot_sync(unsigned mask, int predicate, EMBER_EMU_CALLER) {
  return static_cast<unsigned>(ember::emu::warp_collective(
      {ember::emu::WarpOp::Ballot, mask, predicate != 0, warpSize, 0, 0}, {"__ballot_sync", file, line}));
}
inline int __any_sync(unsigned mask, int predicate, EMBER_EMU_CALLER) {
  return static_cast<int>(ember::emu::warp_collective(
      {ember::emu::WarpOp::Any, mask, predicate != 0, warpSize, 0, 0}, {"__any_sync", file, line}));
}
inline int __all_sync(unsigned mask, int predicate, EMBER_EMU_CALLER) {
  return static_cast<int>(ember::emu::warp_collective(
      {ember::emu::WarpOp::All, mask, predicate != 0, warpSize, 0, 0}, {"__all_sync", file, line}));
}

// --- Launches ------------------------------------------------------------------------------------
namespace ember::emu {

// One kernel launch: its configuration and where it was written.
struct LaunchConfig {
  dim3 grid, block;
  size_t dynamic_shared_bytes;
  cudaStream_t stream;
  const char* kernel;  // the kernel as written at the launch site, template arguments included
  const char* file;
  int line;
};

// What every emulated thread of a launch runs: the kernel applied to its own copy of the
// arguments, as a GPU passes them by value to every thread.
class KernelBody {
 public:
  virtual ~KernelBody() = default;
  virtual void run_thread() = 0;
  // The arguments that are pointers, with their positions: the emulated device checks that each
  // points into the memory of the device the kernel runs on.
  struct PointerArgument {
    int position;
    const void* address;
  };
  virtual std::vector<PointerArgument> pointer_arguments() const = 0;
};

// Validates the configuration (launch.cpp), then hands the launch to the runtime linked in
// (runtime.h, submit_launch): run at once on the calling thread, or queued on an emulated
// device's stream. Faults are recorded as CUDA errors, as a real launch's are; nothing is thrown.
void launch(const LaunchConfig& config, std::unique_ptr<KernelBody> body);

// The block's dynamic shared memory (EMBER_DYNAMIC_SHARED): the launch's shared-memory bytes,
// fresh and poisoned for every block.
void* dynamic_shared_memory();

template <class T>
void note_pointer(std::vector<KernelBody::PointerArgument>& out, int position, const T& value) {
  if constexpr (std::is_pointer_v<T>) {
    if (value != nullptr) out.push_back({position, static_cast<const void*>(value)});
  }
}

template <class... Params>
class KernelLaunch {
 public:
  KernelLaunch(void (*kernel)(Params...), const LaunchConfig& config) : kernel_(kernel), config_(config) {}

  template <class... Args>
  void operator()(Args&&... args) const {
    using Stored = std::tuple<std::decay_t<Params>...>;
    struct Body final : KernelBody {
      void (*kernel)(Params...);
      Stored params;
      Body(void (*k)(Params...), Stored p) : kernel(k), params(std::move(p)) {}
      void run_thread() override { std::apply(kernel, params); }
      std::vector<PointerArgument> pointer_arguments() const override {
        std::vector<PointerArgument> out;
        int position = 0;
        std::apply([&](const auto&... p) { (note_pointer(out, position++, p), ...); }, params);
        return out;
      }
    };
    launch(config_, std::make_unique<Body>(kernel_, Stored(std::forward<Args>(args)...)));
  }

 private:
  void (*kernel_)(Params...);
  LaunchConfig config_;
};

template <class... Params>
KernelLaunch<Params...> make_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                                    cudaStream_t stream, const char* name, const char* file, int line) {
  return KernelLaunch<Params...>(kernel, LaunchConfig{grid, block, shared_bytes, stream, name, file, line});
}

}  // namespace ember::emu
