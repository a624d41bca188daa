// conv2d forward, backward-input and backward-weight (the implicit-GEMM kernel of
// kernels/cuda/conv2d.cu) on the emulator against the CPU kernels: stride, padding, dilation,
// batch 1, odd channel counts, non-square kernels and images, both row-tile heights of the float
// kernel (64, and 128 when the GEMM has more than 64 rows), the reduction cursors' carries (R*S
// below, at and above the 8-step tile), and the weight gradient's batch split, including groups of
// more than one image with a partial last group. Workspaces are poisoned with NaN, so a partial
// sum the kernel forgets to write shows up in dw.
#include "emulated_checks.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cuda/conv2d.h"

namespace cpu = ember::kernels::cpu;
using ember::kernels::Conv2dShape;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

namespace {

std::string describe(const Conv2dShape& s) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "x [" + n(s.batch) + ", " + n(s.in_channels) + ", " + n(s.in_h) + ", " + n(s.in_w) + "] w [" +
         n(s.out_channels) + ", " + n(s.in_channels) + ", " + n(s.kernel_h) + ", " + n(s.kernel_w) + "] stride " +
         n(s.stride_h) + "x" + n(s.stride_w) + " pad " + n(s.pad_h) + "x" + n(s.pad_w) + " dilation " +
         n(s.dilation_h) + "x" + n(s.dilation_w);
}

// The batch split conv2d.cu's weight_split picks, recomputed here so that the test states which
// shapes split: enough slices for about 512 blocks of 64 x 128 (rows K, columns C*R*S), whole
// images per slice.
struct Split {
  int64_t splits, per;
};
Split expected_split(const Conv2dShape& s) {
  const int64_t crs = s.in_channels * s.kernel_h * s.kernel_w;
  const int64_t blocks = ((s.out_channels + 63) / 64) * ((crs + 127) / 128);
  const int64_t want = std::min({(512 + blocks - 1) / blocks, s.batch, int64_t(65535)});
  const int64_t per = (s.batch + want - 1) / want;
  return {(s.batch + per - 1) / per, per};
}

// dbias sums N * P values of dy per channel: the CUDA kernel in 256 strided partial sums and
// a tree, the CPU in its own order. In float32 the two differ by more than 1e-5 relative once
// that is thousands of terms: for the 513-image shape (8208 terms, sums of magnitude 2 to 86)
// the largest difference measured over 5 seeds was 5.7e-5 absolute (2.3e-5 relative; each side
// was within 5.4e-5 of the exact sum), so long float32 sums get 1e-4. dw sums as many products
// per weight (N * P of them), split into batch slices on the GPU and into two halves of the batch
// on the CPU (Note [image shards]): for the 513-image shape an element that cancels to 0.12 differs
// by 1.6e-5 absolute, so dw gets the same tolerance.
template <class T>
double long_sum_tolerance(const Conv2dShape& s) {
  const bool long_sum = s.batch * s.out_h() * s.out_w() > 1024;
  return std::is_same_v<T, float> && long_sum ? 1e-4 : ember::test::tolerance<T>();
}

template <class T>
T* or_null(std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

// Every conv2d kernel on the emulator and on the CPU for one shape, with and without bias.
template <class T>
void check_conv2d(const Conv2dShape& s, std::mt19937_64& rng) {
  const std::string what = describe(s);
  INFO(what);
  const int64_t P = s.out_h(), Q = s.out_w();
  REQUIRE(P >= 1);
  REQUIRE(Q >= 1);
  const size_t x_size = s.batch * s.in_channels * s.in_h * s.in_w;
  const size_t w_size = s.out_channels * s.in_channels * s.kernel_h * s.kernel_w;
  const size_t y_size = s.batch * s.out_channels * P * Q;
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

  const Split split = expected_split(s);
  const int64_t ws_size = cuda::conv2d_backward_weight_workspace(s);
  CHECK(ws_size == (split.splits > 1 ? split.splits * static_cast<int64_t>(w_size) : 0));
  for (bool with_bias : {false, true}) {
    std::vector<T> ws = poisoned<T>(ws_size);
    std::vector<T> dw = poisoned<T>(w_size), want_dw(w_size);
    std::vector<T> db = poisoned<T>(s.out_channels), want_db = poisoned<T>(s.out_channels);
    cuda::conv2d_backward_weight<T>(dy.data(), x.data(), dw.data(), with_bias ? db.data() : nullptr, s, or_null(ws),
                                    stream);
    cpu::conv2d_backward_weight<T>(dy.data(), x.data(), want_dw.data(), with_bias ? want_db.data() : nullptr, s,
                                   or_null(cpu_ws));
    const std::string split_text = " (" + std::to_string(split.splits) + " batch splits of " +
                                   std::to_string(split.per) + "), " + what;
    CHECK(matches(dw, want_dw, std::string("conv2d_backward_weight") + (with_bias ? " with dbias" : "") + split_text,
                  long_sum_tolerance<T>(s)));
    // Without dbias the bias buffer stays untouched (NaN on both sides).
    CHECK(matches(db, want_db, std::string("conv2d_backward_weight dbias") + (with_bias ? "" : " (not asked)") +
                                   split_text, long_sum_tolerance<T>(s), /*nan_equal=*/!with_bias));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("emulated conv2d forward and backwards match the CPU with stride, padding and dilation",
                   "[cuda-emulated][conv2d]", float, double) {
  std::mt19937_64 rng(31);
  //     batch C   H  W   K  R  S  sh sw ph pw dh dw
  const Conv2dShape shapes[] = {
      // Batch 1 (no split), odd channels, a 3x2 kernel with stride, padding and dilation on one
      // axis each; R*S = 6 < 8 carries into the channel digit.
      {1, 3, 7, 5, 5, 3, 2, 2, 1, 1, 0, 1, 2},
      // 70 output channels: the float forward and weight kernels take 128-row tiles. R*S = 9 > 8.
      {3, 5, 9, 11, 70, 3, 3, 2, 2, 2, 2, 2, 2},
      // 67 input channels: backward-input takes 128-row tiles; a 1x5 kernel.
      {2, 67, 4, 6, 3, 1, 5, 1, 2, 0, 2, 1, 1},
      // 1x1, stride 1, no padding: the CPU's direct float kernels; R*S = 1.
      {4, 2, 5, 6, 3, 1, 1},
      // Stride larger than the kernel (input pixels no window reads get dx = 0); R*S = 8.
      {2, 3, 9, 10, 4, 2, 4, 3, 3, 1, 0, 1, 1},
      // Everything 1.
      {1, 1, 1, 1, 1, 1, 1},
      // PyTorch's Conv2d(4, 4, (3, 1), stride=(2, 1), padding=(1, 0)): a 3x1 kernel, stride and
      // padding on the height only.
      {2, 4, 9, 7, 4, 3, 1, 2, 1, 1, 0},
      // Every option different per axis: a 2x3 kernel, stride (1, 2), padding (2, 1), dilation (2, 1).
      {2, 3, 10, 12, 5, 2, 3, 1, 2, 2, 1, 2, 1},
  };
  for (const auto& s : shapes) check_conv2d<TestType>(s, rng);
}

// 513 images of a small problem: one 64 x 128 tile of dw, so conv2d.cu wants 512 slices and gets
// 257 groups of 2 images, the last holding 1 (n_end clipped to the batch).
TEMPLATE_TEST_CASE("emulated conv2d weight gradient splits the batch into groups, the last partial",
                   "[cuda-emulated][conv2d]", float, double) {
  std::mt19937_64 rng(32);
  const Conv2dShape s{513, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};
  const Split split = expected_split(s);
  REQUIRE(split.splits == 257);
  REQUIRE(split.per == 2);
  check_conv2d<TestType>(s, rng);
}
