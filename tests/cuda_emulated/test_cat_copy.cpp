// The copy kernel at the layouts cat and its backward use (core/ops_shape.cpp has no kernel of
// its own): each input written into a channel slice of a [N, C, H, W] output (the destination
// strided by the whole output, at an offset), with a float32 -> float64 cast as dtype promotion
// makes; and the gradient read back out of such a slice into a dense tensor.
#include "emulated_checks.h"

#include <string>
#include <vector>

#include "ember/kernels/cpu/copy.h"
#include "ember/kernels/cuda/copy.h"

namespace cuda = ember::kernels::cuda;
namespace cpu = ember::kernels::cpu;
using namespace ember::test;  // the shared checks and dtype tags of emulated_checks.h
using Shape = std::vector<int64_t>;

namespace {

// cat along dim 1 of inputs with `channels` each: the emulated copy_cast and its CPU twin write
// the same output, every element of it (the output starts poisoned), and equal the inputs; then
// each slice copied back out (the backward's narrow of the gradient) equals its input.
template <class D, class S>
void check_cat_layout(int64_t n, const std::vector<int64_t>& channels, int64_t hw, std::mt19937_64& rng) {
  using DT = typename D::type;
  using ST = typename S::type;
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  const Shape out_strides{total * hw, hw, 1};
  std::vector<DT> got = poisoned<DT>(static_cast<size_t>(n * total * hw)), got_cpu = got, want = got;
  std::vector<std::vector<ST>> inputs;
  int64_t offset = 0;
  for (int64_t c : channels) {
    inputs.push_back(random_vector<ST>(static_cast<size_t>(n * c * hw), rng));
    const Shape sizes{n, c, hw};
    const Shape src_strides = contiguous_strides(sizes);
    for_each_index(sizes, [&](const Shape& i) {
      want[offset * hw + offset_of(i, out_strides)] = static_cast<DT>(inputs.back()[offset_of(i, src_strides)]);
    });
    const ember::kernels::StridedLoop<2> loop{sizes, {out_strides, src_strides}};
    cuda::copy_cast(got.data() + offset * hw, D::code, inputs.back().data(), S::code, loop, default_stream());
    cpu::copy_cast(got_cpu.data() + offset * hw, D::code, inputs.back().data(), S::code, loop);
    offset += c;
  }
  const std::string what = std::string("cat layout ") + dtype_name(S::code) + " into " + dtype_name(D::code) +
                           ", N " + std::to_string(n) + ", HW " + std::to_string(hw);
  CHECK(matches(got, want, what, tolerance<DT>()));
  CHECK(matches(got_cpu, want, "cpu " + what, tolerance<DT>()));
  // The backward: slice c of the (now written) output back into a dense [n, c, hw] buffer.
  offset = 0;
  for (size_t k = 0; k < channels.size(); ++k) {
    const Shape sizes{n, channels[k], hw};
    std::vector<DT> back = poisoned<DT>(static_cast<size_t>(n * channels[k] * hw)), back_cpu = back, back_want(back.size());
    for (size_t i = 0; i < back_want.size(); ++i) back_want[i] = static_cast<DT>(inputs[k][i]);
    const ember::kernels::StridedLoop<2> loop{sizes, {contiguous_strides(sizes), out_strides}};
    cuda::copy_cast(back.data(), D::code, got.data() + offset * hw, D::code, loop, default_stream());
    cpu::copy_cast(back_cpu.data(), D::code, got.data() + offset * hw, D::code, loop);
    CHECK(matches(back, back_want, what + ", slice " + std::to_string(k) + " read back", tolerance<DT>()));
    CHECK(matches(back_cpu, back_want, "cpu " + what + ", slice " + std::to_string(k) + " read back", tolerance<DT>()));
    offset += channels[k];
  }
}

}  // namespace

TEST_CASE("emulated copy_cast writes cat's channel slices and reads them back as the CPU twin", "[cuda-emulated][copy]") {
  std::mt19937_64 rng(17);
  check_cat_layout<F32, F32>(2, {3, 5, 1}, 20, rng);
  check_cat_layout<F64, F64>(1, {7, 2}, 9, rng);
  check_cat_layout<F64, F32>(3, {4, 4}, 33, rng);   // float32 input promoted into a float64 output
  check_cat_layout<F32, F32>(4, {16, 8}, 49, rng);  // many blocks
}
