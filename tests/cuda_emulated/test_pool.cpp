// Pooling on the emulator against the CPU (kernels/cpu/pool.h). max_pool2d forward and backward: padding,
// stride smaller than the kernel (overlapping windows, whose gradients the backward gathers and
// sums in output order, as the CPU scatters them), floor-mode edges, the CPU's 2x2/stride-2 fast
// path, and the conventions: ties keep the first index, a NaN wins, all -inf windows keep their
// first index; ceil mode's partial last windows and dilation. Values and argmax must match
// exactly. avg_pool2d (count_include_pad, divisor_override, ceil mode), adaptive average (global
// and uneven windows) and adaptive max: the backward gathers sum in the CPU's order, so gradients
// match exactly too; forward sums match to rounding (the CPU's global mean is a vectorised sum).
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/pool.h"
#include "ember/kernels/cuda/pool.h"

using ember::kernels::AdaptivePool2dShape;

namespace cpu = ember::kernels::cpu;
using ember::kernels::Pool2dShape;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

namespace {

std::string describe(const Pool2dShape& s) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "x [" + n(s.batch) + ", " + n(s.channels) + ", " + n(s.in_h) + ", " + n(s.in_w) + "] kernel " +
         n(s.kernel_h) + "x" + n(s.kernel_w) + " stride " + n(s.stride_h) + "x" + n(s.stride_w) + " pad " +
         n(s.pad_h) + "x" + n(s.pad_w) + " dilation " + n(s.dilation_h) + "x" + n(s.dilation_w) +
         (s.ceil_mode ? " ceil" : "");
}

enum class Values { Random, Ties, Special };

// Random; or small integers (many ties in every window); or random with NaNs and -infs sprinkled
// in (some windows all -inf).
template <class T>
std::vector<T> pool_input(size_t n, Values kind, std::mt19937_64& rng) {
  if (kind == Values::Ties) {
    const auto ints = ember::test::random_vector<int>(n, rng, -2, 3);
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(ints[i]);
    return v;
  }
  auto v = ember::test::random_vector<T>(n, rng);
  if (kind == Values::Special) {
    for (size_t i = 0; i < n; ++i) {
      if (i % 7 == 3) v[i] = std::numeric_limits<T>::quiet_NaN();
      if (i % 5 == 1 || (i >= 8 && i < 16)) v[i] = -std::numeric_limits<T>::infinity();
    }
  }
  return v;
}

// Exactly equal element by element, infinities and NaN included (matches() measures a distance,
// which is NaN between two equal infinities).
template <class T>
bool identical(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))) {
      FAIL_CHECK(what << ": element " << i << " of " << got.size() << " is " << got[i] << ", expected " << want[i]);
      return false;
    }
  }
  return true;
}

template <class T>
void check_pool(const Pool2dShape& s, Values kind, std::mt19937_64& rng) {
  const std::string what = describe(s) + (kind == Values::Ties ? ", ties" : kind == Values::Special ? ", NaN and -inf" : "");
  const size_t in_size = s.batch * s.channels * s.in_h * s.in_w;
  const size_t out_size = s.batch * s.channels * s.out_h() * s.out_w();
  const auto x = pool_input<T>(in_size, kind, rng);
  const auto stream = ember::test::default_stream();

  std::vector<T> y = poisoned<T>(out_size), want_y(out_size);
  std::vector<int64_t> argmax = poisoned<int64_t>(out_size), want_argmax(out_size);
  cuda::max_pool2d_forward<T>(x.data(), y.data(), argmax.data(), s, stream);
  cpu::max_pool2d_forward<T>(x.data(), want_y.data(), want_argmax.data(), s);
  CHECK(identical(y, want_y, "max_pool2d_forward y, " + what));
  CHECK(matches(argmax, want_argmax, "max_pool2d_forward argmax, " + what));

  const auto dy = ember::test::random_vector<T>(out_size, rng);
  std::vector<T> dx = poisoned<T>(in_size), want_dx(in_size);
  cuda::max_pool2d_backward<T>(dy.data(), argmax.data(), dx.data(), s, stream);
  cpu::max_pool2d_backward<T>(dy.data(), want_argmax.data(), want_dx.data(), s);
  // Both add an input's gradients in output order, so the sums agree bit for bit.
  CHECK(matches(dx, want_dx, "max_pool2d_backward, " + what, 0.0));
}

//    batch C  H  W  kh kw sh sw ph pw
const Pool2dShape kShapes[] = {
    {2, 3, 7, 9, 3, 2, 2, 1, 1, 1},  // overlapping along h and w, padding on both axes, odd sizes
    {1, 2, 6, 6, 3, 3, 1, 1, 1, 1},  // stride 1: every input in up to 9 windows
    {2, 2, 7, 9, 2, 2, 2, 2, 0, 0},  // the CPU's 2x2/stride-2 path; floor mode drops a row and a column
    {1, 1, 5, 4, 5, 4, 1, 1, 2, 2},  // window as big as the image, padded: 5x5 outputs of one plane
    {3, 1, 1, 1, 1, 1, 1, 1, 0, 0},  // 1x1
    {1, 3, 10, 3, 4, 1, 3, 2, 2, 0}, // stride 3 over a 4-tall window (overlap 1), a 1-wide kernel
    {2, 3, 9, 10, 3, 2, 2, 1, 1, 0}, // a 3x2 window, stride (2, 1), padding (1, 0)
    {1, 2, 7, 11, 2, 4, 1, 3, 1, 2}, // a 2x4 window, stride (1, 3), padding (1, 2) = half of each side
    {2, 3, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, true},  // ceil mode: a partial last row and column
    {1, 2, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, true},   // ceil mode drops a window that starts in the padding
    {2, 2, 7, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},   // 2x2/stride 2 on odd sizes in ceil mode: not the fast path
    {2, 3, 13, 12, 3, 3, 2, 2, 2, 1, 2, 2},       // dilation 2, padding up to half the effective kernel
    {1, 4, 10, 15, 2, 3, 3, 2, 1, 2, 3, 2, true}, // dilation (3, 2), ceil mode, rectangular
    {1, 1, 6, 6, 3, 3, 1, 1, 2, 2, 2, 2},         // dilation 2, stride 1: windows that skip padding taps
};

}  // namespace

TEMPLATE_TEST_CASE("emulated max_pool2d forward and backward match the CPU with padding and overlapping windows",
                   "[cuda-emulated][pool]", float, double) {
  std::mt19937_64 rng(41);
  for (const auto& s : kShapes) check_pool<TestType>(s, Values::Random, rng);
}

TEMPLATE_TEST_CASE("emulated max_pool2d keeps the first of tied maxima and sums overlapping gradients",
                   "[cuda-emulated][pool]", float, double) {
  std::mt19937_64 rng(42);
  for (const auto& s : kShapes) check_pool<TestType>(s, Values::Ties, rng);
}

TEMPLATE_TEST_CASE("emulated max_pool2d takes a NaN as the max and keeps the first index of an all -inf window",
                   "[cuda-emulated][pool]", float, double) {
  std::mt19937_64 rng(43);
  for (const auto& s : kShapes) check_pool<TestType>(s, Values::Special, rng);
}

// A large plane count: the grid-stride loops (65535 blocks at most) are not reached at test
// sizes, but several blocks are, with a partial last one.
TEMPLATE_TEST_CASE("emulated max_pool2d covers several blocks with a partial last one", "[cuda-emulated][pool]",
                   float, double) {
  std::mt19937_64 rng(44);
  check_pool<TestType>({3, 5, 13, 11, 3, 3, 2, 2, 1, 1}, Values::Random, rng);
}

namespace {

// avg_pool2d forward and backward, with the divisor variants.
template <class T>
void check_avg_pool(const Pool2dShape& s, bool include_pad, int64_t divisor, std::mt19937_64& rng) {
  const std::string what = describe(s) + (include_pad ? ", count_include_pad" : "") +
                           (divisor != 0 ? ", divisor " + std::to_string(divisor) : "");
  const size_t in_size = s.batch * s.channels * s.in_h * s.in_w;
  const size_t out_size = s.batch * s.channels * s.out_h() * s.out_w();
  const auto x = ember::test::random_vector<T>(in_size, rng);
  const auto stream = ember::test::default_stream();
  std::vector<T> y = poisoned<T>(out_size), want_y(out_size);
  cuda::avg_pool2d_forward<T>(x.data(), y.data(), s, include_pad, divisor, stream);
  cpu::avg_pool2d_forward<T>(x.data(), want_y.data(), s, include_pad, divisor);
  CHECK(matches(y, want_y, "avg_pool2d_forward, " + what));
  const auto dy = ember::test::random_vector<T>(out_size, rng);
  std::vector<T> dx = poisoned<T>(in_size), want_dx(in_size);
  cuda::avg_pool2d_backward<T>(dy.data(), dx.data(), s, include_pad, divisor, stream);
  cpu::avg_pool2d_backward<T>(dy.data(), want_dx.data(), s, include_pad, divisor);
  CHECK(matches(dx, want_dx, "avg_pool2d_backward, " + what));
}

std::string describe(const AdaptivePool2dShape& s) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "x [" + n(s.batch) + ", " + n(s.channels) + ", " + n(s.in_h) + ", " + n(s.in_w) + "] to " + n(s.out_h) +
         "x" + n(s.out_w);
}

template <class T>
void check_adaptive(const AdaptivePool2dShape& s, Values kind, std::mt19937_64& rng) {
  const std::string what = describe(s) + (kind == Values::Ties ? ", ties" : kind == Values::Special ? ", NaN and -inf" : "");
  const size_t in_size = s.batch * s.channels * s.in_h * s.in_w;
  const size_t out_size = s.batch * s.channels * s.out_h * s.out_w;
  const auto x = pool_input<T>(in_size, kind, rng);
  const auto dy = ember::test::random_vector<T>(out_size, rng);
  const auto stream = ember::test::default_stream();

  std::vector<T> y = poisoned<T>(out_size), want_y(out_size);
  std::vector<int64_t> argmax = poisoned<int64_t>(out_size), want_argmax(out_size);
  cuda::adaptive_max_pool2d_forward<T>(x.data(), y.data(), argmax.data(), s, stream);
  cpu::adaptive_max_pool2d_forward<T>(x.data(), want_y.data(), want_argmax.data(), s);
  CHECK(identical(y, want_y, "adaptive_max_pool2d_forward y, " + what));
  CHECK(matches(argmax, want_argmax, "adaptive_max_pool2d_forward argmax, " + what));
  std::vector<T> dx = poisoned<T>(in_size), want_dx(in_size);
  cuda::adaptive_max_pool2d_backward<T>(dy.data(), argmax.data(), dx.data(), s, stream);
  cpu::adaptive_max_pool2d_backward<T>(dy.data(), want_argmax.data(), want_dx.data(), s);
  CHECK(matches(dx, want_dx, "adaptive_max_pool2d_backward, " + what, 0.0));

  if (kind != Values::Random) return;  // averages of NaN and -inf say nothing more
  std::vector<T> mean = poisoned<T>(out_size), want_mean(out_size);
  cuda::adaptive_avg_pool2d_forward<T>(x.data(), mean.data(), s, stream);
  cpu::adaptive_avg_pool2d_forward<T>(x.data(), want_mean.data(), s);
  CHECK(matches(mean, want_mean, "adaptive_avg_pool2d_forward, " + what));
  std::vector<T> dmean = poisoned<T>(in_size), want_dmean(in_size);
  cuda::adaptive_avg_pool2d_backward<T>(dy.data(), dmean.data(), s, stream);
  cpu::adaptive_avg_pool2d_backward<T>(dy.data(), want_dmean.data(), s);
  CHECK(matches(dmean, want_dmean, "adaptive_avg_pool2d_backward, " + what));
}

//    batch C  H  W  oh ow
const AdaptivePool2dShape kAdaptiveShapes[] = {
    {2, 3, 7, 7, 1, 1},     // global
    {1, 5, 13, 11, 1, 1},   // global, odd plane
    {2, 3, 7, 10, 3, 3},    // uneven overlapping windows
    {2, 3, 11, 9, 5, 4},
    {1, 2, 3, 2, 5, 4},     // more outputs than inputs: windows repeat inputs
    {1, 1, 8, 8, 4, 4},     // windows that tile exactly
    {3, 2, 6, 9, 6, 1},     // identity along h, global along w
};

}  // namespace

TEMPLATE_TEST_CASE("emulated avg_pool2d matches the CPU: padding counted or not, divisor_override, ceil mode",
                   "[cuda-emulated][pool]", float, double) {
  std::mt19937_64 rng(45);
  const Pool2dShape shapes[] = {
      {2, 3, 7, 9, 3, 2, 2, 1, 1, 1},
      {1, 2, 6, 6, 3, 3, 1, 1, 1, 1},
      {2, 2, 7, 9, 2, 2, 2, 2, 0, 0},
      {1, 1, 5, 4, 5, 4, 1, 1, 2, 2},
      {2, 3, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {2, 3, 10, 7, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {1, 2, 11, 6, 2, 4, 3, 1, 1, 2},
      {3, 5, 13, 11, 3, 3, 2, 2, 1, 1},
  };
  for (const auto& s : shapes) {
    check_avg_pool<TestType>(s, true, 0, rng);
    check_avg_pool<TestType>(s, false, 0, rng);
    check_avg_pool<TestType>(s, true, 5, rng);
  }
}

TEMPLATE_TEST_CASE("emulated adaptive max and average pooling match the CPU: global, uneven and repeated windows",
                   "[cuda-emulated][pool]", float, double) {
  std::mt19937_64 rng(46);
  for (const auto& s : kAdaptiveShapes) {
    check_adaptive<TestType>(s, Values::Random, rng);
    check_adaptive<TestType>(s, Values::Ties, rng);
    check_adaptive<TestType>(s, Values::Special, rng);
  }
}
