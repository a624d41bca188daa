// The element-wise engine's threaded split (for_each_strided_parallel): every element of large
// strided, broadcast, transposed and odd-sized loops visited exactly once, with the offsets a
// naive walk gives, on 1 and 2 threads; and binary / copy results bit for bit the same.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <vector>

#include "ember/kernels/cpu/copy.h"
#include "ember/kernels/cpu/elementwise.h"
#include "ember/kernels/cpu/threading.h"

namespace cpu = ember::kernels::cpu;
using ember::kernels::StridedLoop;

namespace {

// The offset of operand k at each element, in the loop's order, by plain index arithmetic.
std::vector<int64_t> naive_offsets(const StridedLoop<2>& loop, size_t k) {
  const int64_t n = ember::kernels::numel_of(loop.sizes);
  std::vector<int64_t> out;
  for (int64_t e = 0; e < n; ++e) {
    int64_t rest = e, offset = 0;
    for (int64_t d = static_cast<int64_t>(loop.sizes.size()) - 1; d >= 0; --d) {
      offset += (rest % loop.sizes[d]) * loop.strides[k][d];
      rest /= loop.sizes[d];
    }
    out.push_back(offset);
  }
  return out;
}

}  // namespace

TEST_CASE("for_each_strided_parallel visits every element once, with a naive walk's offsets, on 1 and 2 threads") {
  const int saved = cpu::get_num_threads();
  // Operand 0 a contiguous output; operand 1 contiguous, transposed, broadcast along a dim, with
  // sizes whose runs the thread split cuts in the middle.
  const std::vector<StridedLoop<2>> loops{
      {{300001}, {{{1}, {1}}}},
      {{257, 509}, {{{509, 1}, {1, 257}}}},
      {{3, 97, 251}, {{{97 * 251, 251, 1}, {251, 0, 1}}}},
      {{2, 5, 7, 1000}, {{{35000, 7000, 1000, 1}, {7, 1, 70000 / 7000, 10}}}},
  };
  for (const StridedLoop<2>& loop : loops) {
    const std::vector<int64_t> want_out = naive_offsets(loop, 0), want_in = naive_offsets(loop, 1);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      // seen[out offset] = the input offset the run paired it with, + 1 (0: not visited).
      std::vector<int64_t> seen(want_out.size(), 0);
      bool twice = false;
      cpu::for_each_strided_parallel(loop, [&](const auto& off, int64_t n, const auto& step) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t& slot = seen.at(static_cast<size_t>(off[0] + i * step[0]));  // a bad offset throws
          twice |= slot != 0;
          slot = off[1] + i * step[1] + 1;
        }
      });
      CAPTURE(threads, loop.sizes);
      CHECK(!twice);
      bool ok = true;
      for (size_t e = 0; e < want_out.size() && ok; ++e) ok = seen[static_cast<size_t>(want_out[e])] == want_in[e] + 1;
      CHECK(ok);
    }
  }
  cpu::set_num_threads(saved);
}

TEST_CASE("binary and copy_cast give the same bits on 1 and 2 threads") {
  const int saved = cpu::get_num_threads();
  const int64_t rows = 411, cols = 389;
  std::vector<float> a(rows * cols), b(cols);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 1013) * 0.37f - 40.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) * 0.11f + 1.0f;
  // out[r, c] = a[c, r] (a transposed) / b[c] (broadcast over rows).
  const StridedLoop<3> loop{{rows, cols}, {{{cols, 1}, {1, rows}, {0, 1}}}};
  std::vector<float> one(rows * cols), two(rows * cols);
  std::vector<double> cast_one(rows * cols), cast_two(rows * cols);
  const StridedLoop<2> cast{{rows, cols}, {{{cols, 1}, {1, rows}}}};
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    std::vector<float>& out = threads == 1 ? one : two;
    std::vector<double>& cast_out = threads == 1 ? cast_one : cast_two;
    cpu::binary(ember::kernels::BinaryOp::Div, ember::kernels::kDTypeFloat32, out.data(), a.data(), b.data(), loop,
                1.0, "div");
    cpu::copy_cast(cast_out.data(), ember::kernels::kDTypeFloat64, a.data(), ember::kernels::kDTypeFloat32, cast);
  }
  cpu::set_num_threads(saved);
  CHECK(one == two);
  CHECK(cast_one == cast_two);
  CHECK(one[1 * cols + 2] == a[2 * rows + 1] / b[2]);
  CHECK(cast_two[5 * cols + 7] == static_cast<double>(a[7 * rows + 5]));
}

TEST_CASE("concat_blocks puts every row's blocks in order on 1 and 2 threads, above and below its 1 MB split") {
  const int saved = cpu::get_num_threads();
  // {rows, floats of each block a row}: 1 MB and more (split between threads, 3 and 7 rows so the
  // split is uneven; an empty block in the middle), and a small copy on the calling thread.
  const std::vector<std::pair<int64_t, std::vector<size_t>>> cases{
      {3, {100000, 0, 37}}, {7, {50021, 40000}}, {1, {300000, 1}}, {5, {3, 4}}};
  for (const auto& [rows, floats] : cases) {
    std::vector<std::vector<float>> srcs;
    std::vector<const void*> ptrs;
    std::vector<size_t> bytes;
    size_t row_floats = 0;
    for (size_t i = 0; i < floats.size(); ++i) {
      srcs.emplace_back(static_cast<size_t>(rows) * floats[i]);
      std::iota(srcs.back().begin(), srcs.back().end(), float(i) * 1e6f);
      ptrs.push_back(srcs.back().data());
      bytes.push_back(floats[i] * sizeof(float));
      row_floats += floats[i];
    }
    std::vector<float> want;
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < floats.size(); ++i) {
        want.insert(want.end(), srcs[i].begin() + r * floats[i], srcs[i].begin() + (r + 1) * floats[i]);
      }
    }
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      std::vector<float> out(static_cast<size_t>(rows) * row_floats, -1.0f);
      cpu::concat_blocks(out.data(), ptrs.data(), bytes.data(), ptrs.size(), rows);
      CAPTURE(threads, rows, floats);
      CHECK(out == want);
    }
  }
  cpu::set_num_threads(saved);
}
