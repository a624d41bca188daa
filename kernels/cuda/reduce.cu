// Sum and max / min (with indices) over [kept, reduced] index spaces: one block-tree reduction
// kernel, optionally split over the reduced range and finished by a second launch
// (Note [Deterministic reductions] in reduce.h).
#include "ember/kernels/cuda/reduce.h"

#include <algorithm>
#include <type_traits>

#include "ember/kernels/cuda/strided.cuh"

namespace ember::kernels::cuda {

namespace {

using detail::Layout;

// --- Ops: what a reduction folds -------------------------------------------------------------

template <class T, class Acc>
struct SumOp {
  using State = Acc;
  __device__ State identity() const { return Acc(0); }
  __device__ State lift(T value, int64_t) const { return static_cast<Acc>(value); }
  __device__ State combine(State a, State b) const { return a + b; }
};

// index < 0 marks the identity (no element seen yet).
template <class T>
struct ArgState {
  T value;
  int64_t index;
};

// The CPU kernel's order as a commutative, associative rule: a NaN beats every number, a larger
// (smaller) value beats a smaller (larger) one, and between equals (or two NaNs) the lower index
// wins. Any folding order therefore picks the element the CPU's left-to-right scan picks.
template <class T, bool take_max>
struct ExtremumOp {
  using State = ArgState<T>;
  __device__ State identity() const { return State{T(0), -1}; }
  __device__ State lift(T value, int64_t r) const { return State{value, r}; }
  __device__ State combine(State a, State b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (a_nan || a.value == b.value) return a.index < b.index ? a : b;
    if constexpr (take_max) return a.value > b.value ? a : b;
    else return a.value < b.value ? a : b;
  }
};

// --- Loads: where the elements come from -----------------------------------------------------

// Pass 1: the input, through the kept and reduced layouts.
template <class Op, class T>
struct InputLoad {
  Op op;
  const T* in;
  Layout<1> kept;
  Layout<1> reduced;
  __device__ int64_t base(int64_t o) const {
    int64_t off[1];
    detail::offsets_of<int64_t, 1>(kept, o, off);
    return off[0];
  }
  __device__ typename Op::State operator()(int64_t base, int64_t r) const {
    int64_t off[1];
    detail::offsets_of<int64_t, 1>(reduced, r, off);
    return op.lift(in[base + off[0]], r);
  }
};

// Pass 2: the chunk results of pass 1, partial[chunk * outputs + o].
template <class State>
struct PartialLoad {
  const State* partial;
  int64_t outputs;
  __device__ int64_t base(int64_t o) const { return o; }
  __device__ State operator()(int64_t base, int64_t chunk) const { return partial[chunk * outputs + base]; }
};

// --- Stores: where the result of (output o, chunk c) goes ------------------------------------

template <class State>
struct PartialStore {
  State* partial;
  int64_t outputs;
  __device__ void operator()(int64_t o, int64_t chunk, State s) const { partial[chunk * outputs + o] = s; }
};

template <class Acc, class Out>
struct SumStore {
  Out* out;
  __device__ void operator()(int64_t o, int64_t, Acc s) const { out[o] = static_cast<Out>(s); }
};

template <class T>
struct ExtremumStore {
  T* values;
  int64_t* indices;
  __device__ void operator()(int64_t o, int64_t, ArgState<T> s) const {
    values[o] = s.value;
    indices[o] = s.index;
  }
};

// --- The kernel ------------------------------------------------------------------------------

// Block (bx, by) folds outputs [group * bx, group * bx + bx) over the reduced range of chunk
// blockIdx.y: thread (tx, ty) folds r = begin + ty, begin + ty + by, ... for output group*bx + tx,
// then a tree over ty in shared memory (by is a power of two) leaves the result in row ty = 0.
// Every thread reaches every __syncthreads(): the loops' trip counts depend only on the block.
template <class Op, class Load, class Store>
__global__ void reduce_kernel(Op op, Load load, Store store, int64_t outputs, int64_t reduced, int64_t chunk) {
  using State = typename Op::State;
  EMBER_DYNAMIC_SHARED(unsigned char, shared_bytes);
  State* shared = reinterpret_cast<State*>(shared_bytes);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int bx = blockDim.x, by = blockDim.y;
  const int slot = ty * bx + tx;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t end = begin + chunk < reduced ? begin + chunk : reduced;
  for (int64_t group = blockIdx.x; group * bx < outputs; group += gridDim.x) {
    const int64_t o = group * bx + tx;
    State acc = op.identity();
    if (o < outputs) {
      const int64_t base = load.base(o);
      for (int64_t r = begin + ty; r < end; r += by) acc = op.combine(acc, load(base, r));
    }
    shared[slot] = acc;
    __syncthreads();
    for (int half = by / 2; half > 0; half /= 2) {
      if (ty < half) shared[slot] = op.combine(shared[slot], shared[slot + half * bx]);
      __syncthreads();
    }
    if (ty == 0 && o < outputs) store(o, static_cast<int64_t>(blockIdx.y), shared[tx]);
    __syncthreads();  // row 0 is read before the next group overwrites it
  }
}

// --- Launch shape ----------------------------------------------------------------------------

struct Plan {
  int bx = 1, by = 1;     // block shape: threads along outputs, along the reduced range
  unsigned grid_x = 1;    // blocks along output groups (grid-stride beyond it)
  int64_t split = 1;      // chunks of the reduced range (grid y); > 1 needs the second pass
  int64_t chunk = 0;      // reduced elements per chunk
};

int pow2_at_least(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

// Threads run along the outputs when neighbouring outputs are neighbours in memory (coalesced
// loads), else along the reduced range. The split aims at ~kTargetBlocks blocks while leaving each
// thread at least kMinPerThread elements. A function of the shape only (deterministic).
Plan plan_for(int64_t outputs, int64_t reduced, bool outputs_adjacent, bool allow_split) {
  constexpr int64_t kTargetBlocks = 512, kMinPerThread = 32, kMaxSplit = 1024, kMaxGridX = 65535;
  Plan p;
  if (outputs_adjacent) {
    p.bx = pow2_at_least(outputs, 32);
    p.by = pow2_at_least(reduced, detail::kThreads / p.bx);
  } else {
    p.by = pow2_at_least(reduced, detail::kThreads);
    p.bx = pow2_at_least(outputs, detail::kThreads / p.by);
  }
  const int64_t groups = (outputs + p.bx - 1) / p.bx;
  p.grid_x = static_cast<unsigned>(std::min(std::max<int64_t>(groups, 1), kMaxGridX));
  if (allow_split && groups < kTargetBlocks) {
    const int64_t by_work = reduced / (p.by * kMinPerThread);
    const int64_t by_blocks = (kTargetBlocks + groups - 1) / groups;
    p.split = std::max<int64_t>(1, std::min({by_work, by_blocks, kMaxSplit}));
  }
  p.chunk = (reduced + p.split - 1) / p.split;
  if (p.split > 1) p.split = (reduced + p.chunk - 1) / p.chunk;  // no empty trailing chunk
  return p;
}

struct Shape2 {
  int64_t outputs, reduced;
  Layout<1> kept, red;
  bool outputs_adjacent;
};

Shape2 shape_of(const ReduceLoop& loop, const char* op) {
  Shape2 s;
  s.outputs = numel_of(loop.kept.sizes);
  s.reduced = numel_of(loop.reduced.sizes);
  s.kept = detail::pack<1>(loop.kept, op);
  s.red = detail::pack<1>(loop.reduced, op);
  s.outputs_adjacent = s.outputs > 1 && s.kept.ndim > 0 && s.kept.strides[0][s.kept.ndim - 1] == 1;
  return s;
}

size_t workspace_bytes(const ReduceLoop& loop, size_t state_bytes, const char* op) {
  Shape2 s = shape_of(loop, op);
  if (s.outputs == 0) return 0;
  Plan p = plan_for(s.outputs, s.reduced, s.outputs_adjacent, true);
  return p.split > 1 ? static_cast<size_t>(p.split * s.outputs) * state_bytes : 0;
}

template <class Op, class T, class FinalStore>
void run_reduce(Op op, const T* in, const ReduceLoop& loop, FinalStore final_store, void* workspace,
                size_t workspace_bytes_given, cudaStream_t stream, const char* name) {
  using State = typename Op::State;
  Shape2 s = shape_of(loop, name);
  if (s.outputs == 0) return;
  Plan p = plan_for(s.outputs, s.reduced, s.outputs_adjacent, true);
  InputLoad<Op, T> load{op, in, s.kept, s.red};
  dim3 block(p.bx, p.by);
  size_t shared = sizeof(State) * p.bx * p.by;
  if (p.split == 1) {
    EMBER_LAUNCH(dim3(p.grid_x, 1), block, shared, stream, reduce_kernel<Op, InputLoad<Op, T>, FinalStore>)(
        op, load, final_store, s.outputs, s.reduced, p.chunk);
    EMBER_CUDA_LAUNCH_CHECK(name);
    return;
  }
  const size_t needed = static_cast<size_t>(p.split * s.outputs) * sizeof(State);
  EMBER_CHECK(workspace != nullptr && workspace_bytes_given >= needed, name, ": the CUDA reduction needs ",
              needed, " bytes of workspace, got ", workspace_bytes_given);
  State* partial = static_cast<State*>(workspace);
  EMBER_LAUNCH(dim3(p.grid_x, static_cast<unsigned>(p.split)), block, shared, stream,
               reduce_kernel<Op, InputLoad<Op, T>, PartialStore<State>>)(
      op, load, PartialStore<State>{partial, s.outputs}, s.outputs, s.reduced, p.chunk);
  EMBER_CUDA_LAUNCH_CHECK(name);
  // Pass 2: chunk c of output o sits at partial[c * outputs + o], so outputs are adjacent.
  Plan q = plan_for(s.outputs, p.split, true, false);
  dim3 block2(q.bx, q.by);
  size_t shared2 = sizeof(State) * q.bx * q.by;
  EMBER_LAUNCH(dim3(q.grid_x, 1), block2, shared2, stream, reduce_kernel<Op, PartialLoad<State>, FinalStore>)(
      op, PartialLoad<State>{partial, s.outputs}, final_store, s.outputs, p.split, q.chunk);
  EMBER_CUDA_LAUNCH_CHECK(name);
}

template <class T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
template <class T>
using SumOut = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

}  // namespace

size_t sum_workspace_bytes(const ReduceLoop& loop) { return workspace_bytes(loop, sizeof(double), "sum"); }

void sum(void* out, int out_dtype, const void* in, int in_dtype, const ReduceLoop& loop, void* workspace,
         size_t workspace_bytes_given, cudaStream_t stream) {
  dispatch_dtype(in_dtype, "sum", [&](auto tag) {
    using T = decltype(tag);
    using Acc = SumAcc<T>;
    using Out = SumOut<T>;
    const int expected = std::is_floating_point_v<T> ? in_dtype : kDTypeInt64;
    EMBER_CHECK(out_dtype == expected, "sum: a sum of dtype code ", in_dtype, " is written as dtype code ",
                expected, ", got ", out_dtype);
    static_assert(sizeof(Acc) == sizeof(double), "sum_workspace_bytes assumes 8-byte partial sums");
    run_reduce(SumOp<T, Acc>{}, static_cast<const T*>(in), loop, SumStore<Acc, Out>{static_cast<Out*>(out)},
               workspace, workspace_bytes_given, stream, "sum");
  });
}

size_t extremum_workspace_bytes(const ReduceLoop& loop, int dtype) {
  size_t state_bytes = 0;
  dispatch_dtype(dtype, "max", [&](auto tag) { state_bytes = sizeof(ArgState<decltype(tag)>); });
  return workspace_bytes(loop, state_bytes, "max");
}

void extremum(bool take_max, void* values, int64_t* indices, const void* in, int dtype, const ReduceLoop& loop,
              void* workspace, size_t workspace_bytes_given, cudaStream_t stream) {
  const char* name = take_max ? "max" : "min";
  EMBER_CHECK(numel_of(loop.reduced.sizes) > 0, name, ": cannot reduce over 0 elements");
  dispatch_dtype(dtype, name, [&](auto tag) {
    using T = decltype(tag);
    ExtremumStore<T> store{static_cast<T*>(values), indices};
    if (take_max) {
      run_reduce(ExtremumOp<T, true>{}, static_cast<const T*>(in), loop, store, workspace, workspace_bytes_given,
                 stream, name);
    } else {
      run_reduce(ExtremumOp<T, false>{}, static_cast<const T*>(in), loop, store, workspace, workspace_bytes_given,
                 stream, name);
    }
  });
}

}  // namespace ember::kernels::cuda
