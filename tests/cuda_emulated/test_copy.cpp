// copy_cast, copy_strided and fill on the emulator against reference loops written here (the CPU
// copy lives in core/tensor.cpp, which these tests do not link): every dtype pair, 1 to 8 dims,
// permuted / padded / step-2 / broadcast layouts, many blocks, and offsets past 2^32 elements.
#include "emulated_checks.h"

#include <sys/mman.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

#include "ember/common/error.h"
#include "ember/kernels/cpu/copy.h"
#include "ember/kernels/cuda/copy.h"

namespace cuda = ember::kernels::cuda;
namespace cpu = ember::kernels::cpu;
using namespace ember::test;  // the shared checks and dtype tags of emulated_checks.h
using Shape = std::vector<int64_t>;

namespace {

template <class Fn>
void for_each_dtype(Fn&& fn) {
  fn(F32{});
  fn(F64{});
  fn(I64{});
  fn(U8{});
  fn(Bool{});
}

// Sources with zeros, fractions in (-1, 1) and, for floats, negative values that wrap in uint8.
template <class D>
std::vector<typename D::type> source_values(size_t n, std::mt19937_64& rng) {
  using T = typename D::type;
  std::vector<T> v;
  if constexpr (D::code == ember::kernels::kDTypeBool) v = ember::test::random_vector<T>(n, rng, 0, 2);
  else if constexpr (std::is_same_v<T, uint8_t>) v = ember::test::random_vector<T>(n, rng, 0, 256);
  else if constexpr (std::is_same_v<T, int64_t>) v = ember::test::random_vector<T>(n, rng, -100000, 100000);
  else {
    v = ember::test::random_vector<T>(n, rng, -300, 300);
    for (size_t i = 3; i < n; i += 7) v[i] = static_cast<T>(v[i] / 300);  // (-1, 1): 0 as an integer, true as a bool
  }
  if constexpr (D::code != ember::kernels::kDTypeBool) {
    for (size_t i = 5; i < n; i += 11) v[i] = T(0);
  }
  return v;
}

// The conversion copy.h documents: to bool as `src != 0`, floating to an integer through int64
// (-1.0 becomes 255 in uint8, as the CPU's cast does on x86), anything else a static_cast.
template <class D, class S>
typename D::type reference_cast(typename S::type v) {
  using DT = typename D::type;
  using ST = typename S::type;
  if constexpr (D::code == ember::kernels::kDTypeBool) return static_cast<DT>(v != ST(0));
  else if constexpr (std::is_floating_point_v<ST> && std::is_integral_v<DT>) return static_cast<DT>(static_cast<int64_t>(v));
  else return static_cast<DT>(v);
}

// Strides of a layout over `sizes`: dense in the dim order `order` (its last entry the fastest),
// each dim's extent padded by `pad`, the fastest dim stepping `step`; dims in `broadcast` stride 0.
Shape layout_strides(const Shape& sizes, const std::vector<int>& order, int64_t pad, int64_t step,
                     const std::vector<bool>& broadcast = {}) {
  Shape strides(sizes.size(), 0);
  int64_t next = step;
  for (size_t k = order.size(); k-- > 0;) {
    const int d = order[k];
    if (!broadcast.empty() && broadcast[d]) continue;
    strides[d] = next;
    next *= sizes[d] + pad;
  }
  return strides;
}

std::vector<int> identity_order(size_t n) {
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

std::vector<int> random_order(size_t n, std::mt19937_64& rng) {
  std::vector<int> order = identity_order(n);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// dst (dtype D) = src (dtype S) over (sizes, dst_strides, src_strides), through copy_cast or
// copy_strided, against the reference; the dst buffer's gaps must keep their poison.
template <class D, class S>
void check_copy(const Shape& sizes, const Shape& dst_strides, const Shape& src_strides, bool strided_api,
                std::mt19937_64& rng, const std::string& layout) {
  using DT = typename D::type;
  const size_t dst_extent = ember::test::storage_extent(sizes, dst_strides);
  const auto src = source_values<S>(ember::test::storage_extent(sizes, src_strides), rng);
  std::vector<DT> want = poisoned<DT>(dst_extent), got = poisoned<DT>(dst_extent), got_cpu = poisoned<DT>(dst_extent);
  for_each_index(sizes, [&](const Shape& i) {
    want[offset_of(i, dst_strides)] = reference_cast<D, S>(src[offset_of(i, src_strides)]);
  });
  if (strided_api) {
    ember::kernels::StridedLayout dl, sl;
    dl.ndim = sl.ndim = static_cast<int>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) {
      dl.sizes[d] = sl.sizes[d] = sizes[d];
      dl.strides[d] = dst_strides[d];
      sl.strides[d] = src_strides[d];
    }
    cuda::copy_strided(got.data(), dl, D::code, src.data(), sl, S::code, ember::test::numel_of(sizes),
                       ember::test::default_stream());
    cpu::copy_strided(got_cpu.data(), dl, D::code, src.data(), sl, S::code, ember::test::numel_of(sizes));
  } else {
    const ember::kernels::StridedLoop<2> loop{sizes, {dst_strides, src_strides}};
    cuda::copy_cast(got.data(), D::code, src.data(), S::code, loop, ember::test::default_stream());
    cpu::copy_cast(got_cpu.data(), D::code, src.data(), S::code, loop);
  }
  const std::string what = std::string(strided_api ? "copy_strided " : "copy_cast ") + dtype_name(S::code) +
                           " to " + dtype_name(D::code) + ", shape " + shape_text(sizes) + ", " + layout;
  CHECK(matches(got, want, what, ember::test::tolerance<DT>(), /*nan_equal=*/true));
  CHECK(matches(got_cpu, want, "cpu " + what, ember::test::tolerance<DT>(), /*nan_equal=*/true));  // the CPU twin
}

}  // namespace

TEST_CASE("emulated copy_cast converts every dtype pair as the CPU copy over every layout", "[cuda-emulated][copy]") {
  std::mt19937_64 rng(5);
  struct Case {
    Shape sizes;
    std::string name;
    std::function<Shape(const Shape&)> dst, src;
  };
  auto dense = [](const Shape& s) { return ember::test::contiguous_strides(s); };
  auto transposed = [](const Shape& s) {
    std::vector<int> order = identity_order(s.size());
    std::reverse(order.begin(), order.end());
    return layout_strides(s, order, 0, 1);
  };
  auto padded = [](const Shape& s) { return layout_strides(s, identity_order(s.size()), 2, 1); };
  auto step2 = [](const Shape& s) { return layout_strides(s, identity_order(s.size()), 0, 2); };
  auto scalar = [](const Shape& s) { return Shape(s.size(), 0); };
  auto middle_broadcast = [](const Shape& s) {
    std::vector<bool> b(s.size(), false);
    b[s.size() / 2] = true;
    return layout_strides(s, identity_order(s.size()), 0, 1, b);
  };
  const std::vector<Case> cases = {
      {{}, "0-dim", dense, dense},
      {{1100}, "contiguous (flat, 5 blocks)", dense, dense},
      {{0, 3}, "empty", dense, dense},
      {{5, 7, 9}, "padded dst, transposed src", padded, transposed},
      {{5, 7, 9}, "contiguous dst, broadcast middle dim", dense, middle_broadcast},
      {{5, 7, 9}, "step-2 dst, broadcast scalar src", step2, scalar},
      {{5, 7, 9}, "transposed dst, step-2 src", transposed, step2},
  };
  for_each_dtype([&](auto d) {
    for_each_dtype([&](auto s) {
      for (const Case& c : cases) {
        check_copy<decltype(d), decltype(s)>(c.sizes, c.dst(c.sizes), c.src(c.sizes), false, rng, c.name);
      }
    });
  });
}

TEST_CASE("emulated fill writes every dtype's converted value to exactly numel elements", "[cuda-emulated][copy]") {
  for_each_dtype([&](auto tag) {
    using D = decltype(tag);
    using T = typename D::type;
    std::vector<double> values;
    if constexpr (std::is_floating_point_v<T>) values = {3.75, -2.0, 0.1, 0.0, 1e30};
    else if constexpr (std::is_same_v<T, int64_t>) values = {-5.0, 1e12, 0.0, 7.9};
    else if constexpr (D::code == ember::kernels::kDTypeUInt8) values = {7.0, 255.0, 0.0, 12.5};
    else values = {0.0, 1.0, 2.5, -1.0, 0.25};  // bool: value != 0
    for (double value : values) {
      for (int64_t numel : {int64_t(0), int64_t(1), int64_t(255), int64_t(257), int64_t(3001)}) {
        std::vector<T> got = poisoned<T>(numel + 3), want = poisoned<T>(numel + 3);
        const T converted = D::code == ember::kernels::kDTypeBool ? static_cast<T>(value != 0.0) : static_cast<T>(value);
        std::fill(want.begin(), want.begin() + numel, converted);
        cuda::fill(got.data(), D::code, numel, value, ember::test::default_stream());
        const std::string what =
            std::string("fill ") + dtype_name(D::code) + " with " + std::to_string(value) + ", numel " + std::to_string(numel);
        CHECK(matches(got, want, what, 0.0, /*nan_equal=*/true));
        std::vector<T> got_cpu = poisoned<T>(numel + 3);  // the CPU twin
        cpu::fill(got_cpu.data(), D::code, numel, value);
        CHECK(matches(got_cpu, want, "cpu " + what, 0.0, /*nan_equal=*/true));
      }
    }
  });
}

TEST_CASE("emulated copy_strided matches the reference with 1 to 8 dims over permuted padded and broadcast layouts",
          "[cuda-emulated][copy]") {
  std::mt19937_64 rng(17);
  const Shape dim_sizes = {5, 3, 4, 2, 3, 2, 2, 3};
  for (size_t ndim = 1; ndim <= 8; ++ndim) {
    // The first dim grows until the copy spans several 256-thread blocks.
    Shape sizes(dim_sizes.begin(), dim_sizes.begin() + ndim);
    const int64_t rest = ember::test::numel_of(sizes) / sizes[0];
    sizes[0] = std::max<int64_t>(sizes[0], (1500 + rest - 1) / rest);
    std::vector<bool> broadcast(ndim);
    for (size_t d = 0; d < ndim; ++d) broadcast[d] = rng() % 2 == 0;
    struct Layouts {
      std::string name;
      Shape dst, src;
    };
    const std::vector<Layouts> layouts = {
        {"contiguous dst, permuted src", ember::test::contiguous_strides(sizes),
         layout_strides(sizes, random_order(ndim, rng), 0, 1)},
        {"permuted padded dst, contiguous src", layout_strides(sizes, random_order(ndim, rng), 1, 1),
         ember::test::contiguous_strides(sizes)},
        {"step-2 dst, broadcast src", layout_strides(sizes, identity_order(ndim), 0, 2),
         layout_strides(sizes, identity_order(ndim), 0, 1, broadcast)},
        {"permuted dst, permuted padded src", layout_strides(sizes, random_order(ndim, rng), 0, 1),
         layout_strides(sizes, random_order(ndim, rng), 2, 1)},
    };
    for (const Layouts& l : layouts) {
      const std::string what = std::to_string(ndim) + " dims, " + l.name;
      check_copy<F32, F32>(sizes, l.dst, l.src, true, rng, what);
      check_copy<F32, F64>(sizes, l.dst, l.src, true, rng, what);
      check_copy<U8, I64>(sizes, l.dst, l.src, true, rng, what);
      check_copy<Bool, U8>(sizes, l.dst, l.src, true, rng, what);
      check_copy<I64, F32>(sizes, l.dst, l.src, true, rng, what);
      check_copy<F64, Bool>(sizes, l.dst, l.src, true, rng, what);
    }
  }
  // A transposed 3-D copy of ~44k elements: 172 blocks.
  const Shape big = {37, 41, 29};
  check_copy<F64, F32>(big, ember::test::contiguous_strides(big), layout_strides(big, {2, 0, 1}, 0, 1), true, rng,
                       "many blocks, permuted src");
  check_copy<I64, I64>(big, layout_strides(big, {1, 2, 0}, 0, 1), ember::test::contiguous_strides(big), true, rng,
                       "many blocks, permuted dst");
}

TEST_CASE("emulated copies throw naming copy_ for more than kMaxDims merged dims or mismatched ranks",
          "[cuda-emulated][copy]") {
  const Shape nine(9, 2);
  const Shape strides = layout_strides(nine, identity_order(9), 1, 1);  // padded: no two dims merge
  std::vector<float> buffer(ember::test::storage_extent(nine, strides), 1.0f);
  const ember::kernels::StridedLoop<2> loop{nine, {strides, strides}};
  CHECK_THROWS_WITH(cuda::copy_cast(buffer.data(), ember::kernels::kDTypeFloat32, buffer.data(), ember::kernels::kDTypeFloat32, loop,
                                    nullptr),
                    Catch::Contains("copy_"));
  ember::kernels::StridedLayout two, three;
  two.ndim = 2, three.ndim = 3;
  for (int d = 0; d < 3; ++d) two.sizes[d] = three.sizes[d] = 2, two.strides[d] = three.strides[d] = 1;
  CHECK_THROWS_AS(cuda::copy_strided(buffer.data(), two, ember::kernels::kDTypeFloat32, buffer.data(), three,
                                     ember::kernels::kDTypeFloat32, 4, nullptr),
                  ember::Error);
}

// Source offsets past 2^32 elements (uint8, strides of 3 * 2^31): the element offsets are 64-bit
// even where the linear index fits 32 bits. The source is a reserved, mostly untouched mapping,
// so only the pages read are ever backed; skipped where the system refuses the reservation.
TEST_CASE("emulated copy_strided reaches source offsets that need 64-bit arithmetic", "[cuda-emulated][copy]") {
  const int64_t far = int64_t(3) << 31;  // 6 GiB
  const Shape sizes = {3, 2, 5};
  const Shape src_strides = {far, far / 2 + 4097, 1};
  const size_t extent = ember::test::storage_extent(sizes, src_strides);
  void* mapping = mmap(nullptr, extent, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    WARN("skipped: could not reserve " << extent << " bytes of address space");
    return;
  }
  auto* src = static_cast<uint8_t*>(mapping);
  std::vector<float> want = poisoned<float>(30), got = poisoned<float>(30);
  int64_t k = 0;
  for_each_index(sizes, [&](const Shape& i) {
    const uint8_t value = static_cast<uint8_t>(7 * k + 1);
    src[offset_of(i, src_strides)] = value;
    want[k++] = static_cast<float>(value);
  });
  ember::kernels::StridedLayout dl, sl;
  dl.ndim = sl.ndim = 3;
  const Shape dst_strides = ember::test::contiguous_strides(sizes);
  for (int d = 0; d < 3; ++d) {
    dl.sizes[d] = sl.sizes[d] = sizes[d];
    dl.strides[d] = dst_strides[d];
    sl.strides[d] = src_strides[d];
  }
  cuda::copy_strided(got.data(), dl, ember::kernels::kDTypeFloat32, src, sl, ember::kernels::kDTypeUInt8, 30,
                     ember::test::default_stream());
  munmap(mapping, extent);
  CHECK(matches(got, want, "uint8 to float32 from offsets up to " + std::to_string(extent - 1), 0.0));
}
