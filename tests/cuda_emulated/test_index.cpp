// index_select, index_add and gather on the emulator against their CPU twins
// (kernels/cpu/index.h): elements of 1, 4 and 8 bytes selected along the first, a middle and the
// last dim with repeated indices, the backward's sums (bit for bit: both walk the indices in
// order) with and without a skipped (padding) index, and gathers along each dim of 1- to 4-D
// inputs with an index smaller than the input outside `dim`.
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/kernels/cpu/index.h"
#include "ember/kernels/cuda/index.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::kernels::IndexShape;
using ember::test::matches;
using ember::test::poisoned;
using ember::test::random_vector;

namespace {

std::string describe(const IndexShape& s) {
  return "[" + std::to_string(s.outer) + ", " + std::to_string(s.dim_size) + ", " + std::to_string(s.inner) +
         "] count " + std::to_string(s.count);
}

// outer, dim_size, inner, count: an embedding lookup, a channel pick, the last dim, one index.
const std::vector<IndexShape> kShapes{{1, 20, 8, 37}, {6, 5, 12, 7}, {9, 4, 1, 10}, {3, 7, 5, 1}, {2, 300, 3, 2}};

std::vector<int64_t> random_indices(const IndexShape& s, std::mt19937_64& rng) {
  return random_vector<int64_t>(static_cast<size_t>(s.count), rng, 0.0, static_cast<double>(s.dim_size));
}

}  // namespace

TEMPLATE_TEST_CASE("emulated index_select matches the CPU for every element size", "[cuda-emulated][index]", uint8_t,
                   float, double) {
  std::mt19937_64 rng(31);
  for (const IndexShape& s : kShapes) {
    const std::string what = "index_select " + describe(s);
    auto src = random_vector<TestType>(static_cast<size_t>(s.outer * s.dim_size * s.inner), rng, 0.0, 200.0);
    auto index = random_indices(s, rng);
    const size_t n = static_cast<size_t>(s.selected_numel());
    std::vector<TestType> want(n);
    auto got = poisoned<TestType>(n);
    cpu::index_select(src.data(), index.data(), want.data(), sizeof(TestType), s);
    cuda::index_select(src.data(), index.data(), got.data(), sizeof(TestType), s, nullptr);
    CHECK(matches(got, want, what, 0.0));
  }
}

TEMPLATE_TEST_CASE("emulated index_add matches the CPU bit for bit, a skipped index or none",
                   "[cuda-emulated][index]", float, double) {
  std::mt19937_64 rng(32);
  for (const IndexShape& s : kShapes) {
    for (bool skipping : {false, true}) {
      auto index = random_indices(s, rng);
      const int64_t skip = skipping ? index[0] : -1;  // present in the index, so skipping matters
      const std::string what = "index_add " + describe(s) + (skipping ? " skip " + std::to_string(skip) : "");
      auto src = random_vector<TestType>(static_cast<size_t>(s.selected_numel()), rng);
      auto start = random_vector<TestType>(static_cast<size_t>(s.outer * s.dim_size * s.inner), rng);
      auto want = start, got = start;  // index_add accumulates into what is there
      cpu::index_add<TestType>(src.data(), index.data(), want.data(), skip, s);
      cuda::index_add<TestType>(src.data(), index.data(), got.data(), skip, s, nullptr);
      CHECK(matches(got, want, what, 0.0));
    }
  }
}

TEMPLATE_TEST_CASE("emulated gather matches the CPU along every dim, the index smaller than the input",
                   "[cuda-emulated][index]", uint8_t, float, double) {
  std::mt19937_64 rng(33);
  using ember::kernels::GatherShape;
  // input sizes, index sizes (no larger outside dim).
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases{
      {{50}, {77}}, {{16, 10}, {16, 1}}, {{5, 6, 7}, {8, 4, 7}}, {{3, 4, 5, 6}, {2, 4, 3, 9}}};
  for (const auto& [input, index_sizes] : cases) {
    for (int dim = 0; dim < static_cast<int>(input.size()); ++dim) {
      GatherShape s{.ndim = static_cast<int>(input.size()), .dim = dim, .numel = 1};
      int64_t input_numel = 1;
      for (int d = s.ndim - 1; d >= 0; --d) {
        s.input_strides[d] = input_numel;
        input_numel *= input[d];
      }
      bool fits = true;
      for (int d = 0; d < s.ndim; ++d) {
        s.index_sizes[d] = index_sizes[d];
        s.numel *= index_sizes[d];
        fits &= d == dim || index_sizes[d] <= input[d];
      }
      if (!fits) continue;
      auto src = random_vector<TestType>(static_cast<size_t>(input_numel), rng, 0.0, 200.0);
      auto index = random_vector<int64_t>(static_cast<size_t>(s.numel), rng, 0.0, static_cast<double>(input[dim]));
      std::vector<TestType> want(static_cast<size_t>(s.numel));
      auto got = poisoned<TestType>(static_cast<size_t>(s.numel));
      cpu::gather(src.data(), index.data(), want.data(), sizeof(TestType), s);
      cuda::gather(src.data(), index.data(), got.data(), sizeof(TestType), s, nullptr);
      CHECK(matches(got, want, "gather " + std::to_string(s.ndim) + "-D along dim " + std::to_string(dim), 0.0));
    }
  }
}
