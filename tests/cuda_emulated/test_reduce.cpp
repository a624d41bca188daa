// sum and extremum (max / min with indices) on the emulator against reference loops written here
// (the CPU reductions live in core/ops_reduce.cpp, which these tests do not link): every dim and
// every set of dims of 1-D to 4-D shapes, contiguous and transposed inputs (outputs adjacent in
// memory or not), with and without keepdim, 0-dim and empty shapes, and shapes long enough to
// take the split path through the workspace.
//
// The kernels see the input as core/ops_reduce.cpp's reduce_loop builds it: the kept dims (in
// order, with the input's strides) and the reduced dims; the output is contiguous in the order of
// the kept dims, so keepdim changes only the shape it is given, never the kernel's call. Each
// reference is indexed through the output shape of both keepdim settings to show that.
#include "emulated_checks.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "ember/common/error.h"
#include "ember/kernels/cpu/reduce.h"
#include "ember/kernels/cuda/reduce.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using namespace ember::test;  // the shared checks and dtype tags of emulated_checks.h
using Shape = std::vector<int64_t>;

namespace {

// An input: sizes and strides (contiguous or transposed with padded rows).
struct Input {
  Shape sizes, strides;
  std::string layout;
};

std::vector<Input> inputs_of(const Shape& sizes) {
  Input dense{sizes, ember::test::contiguous_strides(sizes), "contiguous"};
  // Transposed: the first dim is the fastest; each dim's extent padded by one element.
  Shape t(sizes.size());
  int64_t step = 1;
  for (size_t d = 0; d < sizes.size(); ++d) t[d] = step, step *= sizes[d] + 1;
  Input transposed{sizes, t, "transposed, padded"};
  if (sizes.empty()) return {dense};
  return {dense, transposed};
}

// The reduction of `in` over the dims marked in `reduce`.
struct Reduction {
  Input in;
  std::vector<bool> reduce;

  ember::kernels::ReduceLoop loop() const {
    ember::kernels::ReduceLoop loop;
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      auto& part = reduce[d] ? loop.reduced : loop.kept;
      part.sizes.push_back(in.sizes[d]);
      part.strides[0].push_back(in.strides[d]);
    }
    return loop;
  }
  int64_t outputs() const {
    int64_t n = 1;
    for (size_t d = 0; d < in.sizes.size(); ++d) n *= reduce[d] ? 1 : in.sizes[d];
    return n;
  }
  // Per input dim, the stride of the output element in the contiguous output of the shape that
  // sum / max give with this keepdim (reduced dims kept as 1, or dropped): 0 for a reduced dim.
  Shape output_strides(bool keepdim) const {
    Shape out_sizes;
    for (size_t d = 0; d < reduce.size(); ++d) {
      if (!reduce[d]) out_sizes.push_back(in.sizes[d]);
      else if (keepdim) out_sizes.push_back(1);
    }
    const Shape dense = ember::test::contiguous_strides(out_sizes);
    Shape strides(reduce.size(), 0);
    for (size_t d = 0, k = 0; d < reduce.size(); ++d) {
      if (!reduce[d]) strides[d] = dense[k++];
      else if (keepdim) k++;
    }
    return strides;
  }
  // Per input dim, its stride in the reduced index r (row-major over the reduced dims), 0 if kept.
  Shape reduced_index_strides() const {
    Shape strides(reduce.size(), 0);
    int64_t step = 1;
    for (size_t d = reduce.size(); d-- > 0;) {
      if (reduce[d]) strides[d] = step, step *= in.sizes[d];
    }
    return strides;
  }
  std::string describe(bool keepdim) const {
    std::ostringstream out;
    out << "shape " << shape_text(in.sizes) << " (" << in.layout << "), dims {";
    bool first = true;
    for (size_t d = 0; d < reduce.size(); ++d) {
      if (reduce[d]) out << (first ? "" : ", ") << d, first = false;
    }
    out << "}, keepdim " << keepdim;
    return out.str();
  }
};

// A workspace whose bytes are garbage (all ones: NaN as a double), 8-byte aligned.
std::vector<uint64_t> garbage_workspace(size_t bytes) { return std::vector<uint64_t>((bytes + 7) / 8, ~uint64_t(0)); }

// Every set of dims of a small shape; single dims and all dims of a large one.
std::vector<std::vector<bool>> dim_sets(size_t ndim, bool every_subset) {
  std::vector<std::vector<bool>> sets;
  if (every_subset) {
    for (unsigned mask = 0; mask < (1u << ndim); ++mask) {
      std::vector<bool> s(ndim);
      for (size_t d = 0; d < ndim; ++d) s[d] = (mask >> d) & 1;
      sets.push_back(s);
    }
  } else {
    for (size_t d = 0; d < ndim; ++d) {
      std::vector<bool> s(ndim, false);
      s[d] = true;
      sets.push_back(s);
    }
    if (ndim > 1) sets.push_back(std::vector<bool>(ndim, true));
  }
  return sets;
}

// Small shapes of 1 to 4 dims (plus 0-dim, size-1 and size-0 dims), reduced over every set of
// dims (sum) or every dim and all dims (max / min), contiguous and transposed.
const std::vector<Shape> small_shapes = {{}, {1}, {7}, {300}, {5, 6}, {3, 0}, {3, 4, 5}, {2, 3, 4, 5}, {3, 1, 4, 2}};

// Long reductions with few outputs: the kernel splits the reduced range into chunks folded
// through the workspace (reduce.cu's plan_for), with the outputs adjacent in memory (the kept
// dim is the fastest) or not; and one with thousands of outputs over ~280 blocks.
Reduction large(Shape sizes, bool transposed, std::vector<bool> dims) {
  std::vector<Input> in = inputs_of(sizes);
  return {in[transposed ? 1 : 0], std::move(dims)};
}
const std::vector<Reduction>& large_reductions() {
  static const std::vector<Reduction> all = {
      large({17000}, false, {true}),                          // 1 output
      large({2, 17000}, false, {false, true}),                // 2 outputs, not adjacent
      large({2, 9000}, true, {false, true}),                  // 2 outputs, adjacent
      large({5000, 3}, false, {true, false}),                 // 3 outputs, adjacent
      large({2, 3, 2, 1400}, false, {true, true, true, true}),  // 4 strided reduced dims
      large({2, 3, 2, 1400}, true, {true, true, true, true}),
      large({2, 9000}, false, {true, false}),                 // 9000 outputs, no split
  };
  return all;
}
constexpr int kSplitReductions = 6;

template <class D>
std::vector<typename D::type> sum_input(size_t n, std::mt19937_64& rng) {
  using T = typename D::type;
  if constexpr (D::code == ember::kernels::kDTypeBool) return ember::test::random_vector<T>(n, rng, 0, 2);
  else if constexpr (std::is_same_v<T, uint8_t>) return ember::test::random_vector<T>(n, rng, 0, 256);
  else if constexpr (std::is_same_v<T, int64_t>) return ember::test::random_vector<T>(n, rng, -1000, 1000);
  else return ember::test::random_vector<T>(n, rng, -1, 1);
}

// Returns whether the split path ran (the workspace was needed).
template <class D>
bool check_sum(const Reduction& red, std::mt19937_64& rng) {
  using T = typename D::type;
  using Out = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  using Acc = std::conditional_t<std::is_floating_point_v<T>, long double, int64_t>;
  const auto in = sum_input<D>(ember::test::storage_extent(red.in.sizes, red.in.strides), rng);
  const ember::kernels::ReduceLoop loop = red.loop();
  const int64_t outputs = red.outputs();
  const size_t bytes = cuda::sum_workspace_bytes(loop);
  auto workspace = garbage_workspace(bytes);
  std::vector<Out> got = poisoned<Out>(outputs);
  cuda::sum(got.data(), std::is_floating_point_v<T> ? D::code : ember::kernels::kDTypeInt64, in.data(), D::code, loop,
            bytes ? workspace.data() : nullptr, bytes, ember::test::default_stream());
  std::vector<Out> got_cpu = poisoned<Out>(outputs);  // the CPU twin
  cpu::sum(got_cpu.data(), std::is_floating_point_v<T> ? D::code : ember::kernels::kDTypeInt64, in.data(), D::code,
           loop);
  for (bool keepdim : {false, true}) {
    std::vector<Acc> acc(outputs, Acc(0));
    const Shape out_strides = red.output_strides(keepdim);
    for_each_index(red.in.sizes, [&](const Shape& i) {
      acc[ember::test::offset_of(i, out_strides)] += static_cast<Acc>(in[ember::test::offset_of(i, red.in.strides)]);
    });
    std::vector<Out> want(acc.begin(), acc.end());
    CHECK(matches(got, want, std::string("sum of ") + dtype_name(D::code) + ", " + red.describe(keepdim)));
    CHECK(matches(got_cpu, want, std::string("cpu sum of ") + dtype_name(D::code) + ", " + red.describe(keepdim)));
  }
  return bytes > 0;
}

template <class D>
void check_sums(std::mt19937_64& rng) {
  int split = 0;
  for (const Shape& shape : small_shapes) {
    for (const Input& in : inputs_of(shape)) {
      for (const auto& dims : dim_sets(shape.size(), true)) split += check_sum<D>({in, dims}, rng);
    }
  }
  for (const Reduction& red : large_reductions()) split += check_sum<D>(red, rng);
  CHECK(split == kSplitReductions);  // the long reductions did take the two-pass path
}

}  // namespace

TEST_CASE("emulated sum over every set of dims with and without keepdim matches the reference for every dtype",
          "[cuda-emulated][reduce]") {
  std::mt19937_64 rng(3);
  SECTION("float32") { check_sums<F32>(rng); }
  SECTION("float64") { check_sums<F64>(rng); }
  SECTION("int64") { check_sums<I64>(rng); }
  SECTION("uint8 into int64") { check_sums<U8>(rng); }
  SECTION("bool into int64") { check_sums<Bool>(rng); }
}

TEST_CASE("emulated sum throws without the workspace the split path needs", "[cuda-emulated][reduce]") {
  const Reduction red{{{17000}, {1}, "contiguous"}, {true}};
  const ember::kernels::ReduceLoop loop = red.loop();
  const size_t bytes = cuda::sum_workspace_bytes(loop);
  REQUIRE(bytes > 0);
  std::vector<float> in(17000, 1.0f), out(1);
  std::vector<uint64_t> small((bytes - 8) / 8);
  CHECK_THROWS_AS(cuda::sum(out.data(), ember::kernels::kDTypeFloat32, in.data(), ember::kernels::kDTypeFloat32, loop, nullptr, 0,
                            nullptr),
                  ember::Error);
  CHECK_THROWS_AS(cuda::sum(out.data(), ember::kernels::kDTypeFloat32, in.data(), ember::kernels::kDTypeFloat32, loop, small.data(),
                            bytes - 8, nullptr),
                  ember::Error);
  CHECK_THROWS_AS(cuda::sum(out.data(), ember::kernels::kDTypeInt64, in.data(), ember::kernels::kDTypeFloat32, loop, nullptr, 0, nullptr),
                  ember::Error);
}

namespace {

// Inputs with many ties (few distinct values) and, for floats, NaNs (about two per long row).
template <class D>
std::vector<typename D::type> extremum_input(size_t n, int64_t reduced, std::mt19937_64& rng) {
  using T = typename D::type;
  if constexpr (D::code == ember::kernels::kDTypeBool) return ember::test::random_vector<T>(n, rng, 0, 2);
  else if constexpr (std::is_same_v<T, uint8_t>) return ember::test::random_vector<T>(n, rng, 0, 6);
  else if constexpr (std::is_same_v<T, int64_t>) return ember::test::random_vector<T>(n, rng, -5, 5);
  else {
    std::vector<T> v(n);
    std::uniform_int_distribution<int> quarter(-8, 7);
    std::bernoulli_distribution nan(std::min(0.05, 2.0 / static_cast<double>(std::max<int64_t>(reduced, 1))));
    for (auto& x : v) x = nan(rng) ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(quarter(rng)) / T(4);
    return v;
  }
}

template <class D>
bool check_extremum(bool take_max, const Reduction& red, std::mt19937_64& rng) {
  using T = typename D::type;
  const ember::kernels::ReduceLoop loop = red.loop();
  const int64_t reduced = ember::test::numel_of(loop.reduced.sizes);
  const auto in = extremum_input<D>(ember::test::storage_extent(red.in.sizes, red.in.strides), reduced, rng);
  const int64_t outputs = red.outputs();
  const size_t bytes = cuda::extremum_workspace_bytes(loop, D::code);
  auto workspace = garbage_workspace(bytes);
  std::vector<T> got = poisoned<T>(outputs);
  std::vector<int64_t> got_index(outputs, -1);
  cuda::extremum(take_max, got.data(), got_index.data(), in.data(), D::code, loop, bytes ? workspace.data() : nullptr,
                 bytes, ember::test::default_stream());
  std::vector<T> got_cpu = poisoned<T>(outputs);  // the CPU twin
  std::vector<int64_t> got_cpu_index(outputs, -1);
  cpu::extremum(take_max, got_cpu.data(), got_cpu_index.data(), in.data(), D::code, loop);
  // The CPU's scan: elements of one output in increasing reduced index r; the first NaN stops it,
  // a strictly better value replaces the best, so the lowest index wins a tie.
  const Shape r_strides = red.reduced_index_strides();
  for (bool keepdim : {false, true}) {
    std::vector<T> want = poisoned<T>(outputs);
    std::vector<int64_t> want_index(outputs, -1);
    const Shape out_strides = red.output_strides(keepdim);
    for_each_index(red.in.sizes, [&](const Shape& i) {
      const int64_t r = ember::test::offset_of(i, r_strides);
      const int64_t o = ember::test::offset_of(i, out_strides);
      const T x = in[ember::test::offset_of(i, red.in.strides)];
      T& best = want[o];
      const bool take = want_index[o] < 0 ||
                        (best == best && (x != x || (take_max ? x > best : x < best)));
      if (take) best = x, want_index[o] = r;
    });
    const std::string what = std::string(take_max ? "max of " : "min of ") + dtype_name(D::code) + ", " +
                             red.describe(keepdim);
    CHECK(matches(got, want, what + ", values", 0.0, /*nan_equal=*/true));
    CHECK(matches(got_index, want_index, what + ", indices", 0.0));
    CHECK(matches(got_cpu, want, "cpu " + what + ", values", 0.0, /*nan_equal=*/true));
    CHECK(matches(got_cpu_index, want_index, "cpu " + what + ", indices", 0.0));
  }
  return bytes > 0;
}

template <class D>
void check_extrema(std::mt19937_64& rng) {
  int split = 0;
  for (bool take_max : {true, false}) {
    for (const Shape& shape : small_shapes) {
      if (ember::test::numel_of(shape) == 0) continue;  // max over 0 elements throws (below)
      for (const Input& in : inputs_of(shape)) {
        // Every single dim, as max(dim) takes; all dims at once (r over several dims) too; a
        // 0-dim tensor reduces over nothing (one element, index 0).
        for (const auto& dims : dim_sets(shape.size(), false)) split += check_extremum<D>(take_max, {in, dims}, rng);
        if (shape.empty()) split += check_extremum<D>(take_max, {in, {}}, rng);
      }
    }
    for (const Reduction& red : large_reductions()) split += check_extremum<D>(take_max, red, rng);
  }
  CHECK(split == 2 * kSplitReductions);  // max and min
}

}  // namespace

TEST_CASE("emulated max and min over every dim match the CPU scan where the first NaN and the lowest index of a tie win",
          "[cuda-emulated][reduce]") {
  std::mt19937_64 rng(4);
  SECTION("float32") { check_extrema<F32>(rng); }
  SECTION("float64") { check_extrema<F64>(rng); }
  SECTION("int64") { check_extrema<I64>(rng); }
  SECTION("uint8") { check_extrema<U8>(rng); }
  SECTION("bool") { check_extrema<Bool>(rng); }
}

TEST_CASE("emulated max throws over an empty reduced range", "[cuda-emulated][reduce]") {
  const Reduction red{{{3, 0}, {1, 1}, "contiguous"}, {false, true}};
  std::vector<float> values(3), in(1);
  std::vector<int64_t> indices(3);
  CHECK_THROWS_AS(cuda::extremum(true, values.data(), indices.data(), in.data(), ember::kernels::kDTypeFloat32, red.loop(),
                                 nullptr, 0, nullptr),
                  ember::Error);
}
