// conv2d with groups on the emulator against the CPU kernels: the implicit GEMM per channel group
// (kernels/cuda/conv2d.cu, tag [conv2d]) and the depthwise kernels (kernels/cuda/conv2d_depthwise.cu,
// tag [conv2d_depthwise], the family its fault-injection mutant replaces). Outputs and workspaces
// are poisoned with NaN, so an element a kernel forgets to write shows up.
#include "emulated_checks.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cuda/conv2d.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::kernels::Conv2dShape;
using ember::test::matches;
using ember::test::poisoned;

namespace {

std::string describe(const Conv2dShape& s) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return std::string(s.depthwise() ? "depthwise" : "grouped") + " x [" + n(s.batch) + ", " + n(s.in_channels) +
         ", " + n(s.in_h) + ", " + n(s.in_w) + "] w [" + n(s.out_channels) + ", " + n(s.group_in()) + ", " +
         n(s.kernel_h) + ", " + n(s.kernel_w) + "] groups " + n(s.groups) + " stride " + n(s.stride_h) + "x" +
         n(s.stride_w) + " pad " + n(s.pad_h) + "x" + n(s.pad_w) + " dilation " + n(s.dilation_h) + "x" +
         n(s.dilation_w);
}

template <class T>
T* or_null(std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

// Every conv2d kernel on the emulator and on the CPU for one grouped shape, with and without bias.
template <class T>
void check_grouped(const Conv2dShape& s, std::mt19937_64& rng) {
  const std::string what = describe(s);
  INFO(what);
  const size_t x_size = s.batch * s.in_channels * s.in_h * s.in_w;
  const size_t w_size = s.out_channels * s.group_in() * s.kernel_h * s.kernel_w;
  const size_t y_size = s.batch * s.out_channels * s.out_h() * s.out_w();
  const auto x = ember::test::random_vector<T>(x_size, rng);
  const auto w = ember::test::random_vector<T>(w_size, rng);
  const auto bias = ember::test::random_vector<T>(s.out_channels, rng);
  const auto dy = ember::test::random_vector<T>(y_size, rng);
  const auto stream = ember::test::default_stream();
  std::vector<T> cpu_ws(std::max({cpu::conv2d_forward_workspace(s), cpu::conv2d_backward_input_workspace(s),
                                  cpu::conv2d_backward_weight_workspace(s)}));

  for (bool with_bias : {false, true}) {
    const T* b = with_bias ? bias.data() : nullptr;
    std::vector<T> y = poisoned<T>(y_size), want_y(y_size);
    cuda::conv2d_forward<T>(x.data(), w.data(), b, y.data(), s, stream);
    cpu::conv2d_forward<T>(x.data(), w.data(), b, want_y.data(), s, or_null(cpu_ws));
    CHECK(matches(y, want_y, std::string("conv2d_forward") + (with_bias ? " with bias, " : ", ") + what));
  }

  std::vector<T> dx = poisoned<T>(x_size), want_dx(x_size);
  cuda::conv2d_backward_input<T>(dy.data(), w.data(), dx.data(), s, stream);
  cpu::conv2d_backward_input<T>(dy.data(), w.data(), want_dx.data(), s, or_null(cpu_ws));
  CHECK(matches(dx, want_dx, "conv2d_backward_input, " + what));

  const int64_t ws_size = cuda::conv2d_backward_weight_workspace(s);
  if (s.depthwise()) CHECK(ws_size == 0);
  std::vector<T> ws = poisoned<T>(ws_size);
  std::vector<T> dw = poisoned<T>(w_size), want_dw(w_size);
  std::vector<T> db = poisoned<T>(s.out_channels), want_db(s.out_channels);
  cuda::conv2d_backward_weight<T>(dy.data(), x.data(), dw.data(), db.data(), s, or_null(ws), stream);
  cpu::conv2d_backward_weight<T>(dy.data(), x.data(), want_dw.data(), want_db.data(), s, or_null(cpu_ws));
  CHECK(matches(dw, want_dw, "conv2d_backward_weight, " + what));
  CHECK(matches(db, want_db, "conv2d_backward_weight dbias, " + what));
}

}  // namespace

TEMPLATE_TEST_CASE("emulated grouped conv2d matches the CPU per channel group", "[cuda-emulated][conv2d]", float,
                   double) {
  std::mt19937_64 rng(171);
  //     batch C   H  W   K  R  S  sh sw ph pw dh dw groups
  const Conv2dShape shapes[] = {
      {2, 6, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2},    // groups 2, odd sizes
      {3, 9, 8, 7, 15, 3, 2, 2, 1, 1, 0, 1, 2, 3},   // groups 3, odd channels per group
      {1, 8, 5, 6, 8, 1, 1, 1, 1, 0, 0, 1, 1, 4},    // groups 4, 1x1, batch 1
      {2, 4, 6, 6, 140, 3, 3, 1, 1, 1, 1, 1, 1, 2},  // 70 outputs per group: 128-row tiles
      {40, 4, 3, 3, 4, 2, 2, 1, 1, 0, 0, 1, 1, 2},   // the weight gradient's batch split, per group
  };
  for (const auto& s : shapes) check_grouped<TestType>(s, rng);
}

TEMPLATE_TEST_CASE("emulated depthwise conv2d matches the CPU: 3x3 stride 1 and 2, multiplier, dilation",
                   "[cuda-emulated][conv2d_depthwise]", float, double) {
  std::mt19937_64 rng(172);
  //     batch C   H   W  K  R  S  sh sw ph pw dh dw groups
  const Conv2dShape shapes[] = {
      {2, 16, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16},  // MobileNet 3x3, stride 1, padding 1
      {2, 16, 14, 13, 16, 3, 3, 2, 2, 1, 1, 1, 1, 16},  // stride 2, odd width
      {2, 5, 9, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 5},     // multiplier 2
      {1, 7, 13, 12, 7, 5, 5, 1, 1, 4, 4, 2, 2, 7},     // 5x5 dilated, batch 1
      {1, 3, 6, 7, 3, 2, 3, 3, 2, 0, 1, 1, 1, 3},       // non-square kernel, stride (3, 2)
  };
  for (const auto& s : shapes) check_grouped<TestType>(s, rng);
}
