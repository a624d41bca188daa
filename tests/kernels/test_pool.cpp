// max_pool2d forward, fused pool+relu and backward against naive window loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ember/kernels/cpu/pool.h"
#include "ember/kernels/cpu/threading.h"

namespace cpu = ember::kernels::cpu;
using ember::kernels::Pool2dShape;

namespace {

template <class T>
void check_pool(const Pool2dShape& s, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-20, 20);  // small integers: ties happen
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  std::vector<T> x(planes * s.in_h * s.in_w);
  for (auto& v : x) v = T(dist(rng)) / T(4);
  std::vector<T> y(planes * OH * OW), yr(y.size()), dy(y.size()), dx(x.size(), T(NAN));
  std::vector<int64_t> arg(y.size()), argr(y.size());
  for (auto& v : dy) v = T(dist(rng));
  cpu::max_pool2d_forward<T>(x.data(), y.data(), arg.data(), s);
  cpu::max_pool2d_relu_forward<T>(x.data(), yr.data(), argr.data(), s);
  cpu::max_pool2d_backward<T>(dy.data(), arg.data(), dx.data(), s);
  std::vector<double> want_dx(x.size(), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_i = -1;
        for (int64_t kh = 0; kh < s.kernel_h; ++kh)
          for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
            const int64_t ih = oh * s.stride_h - s.pad_h + kh, iw = ow * s.stride_w - s.pad_w + kw;
            if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
            const double v = x[(p * s.in_h + ih) * s.in_w + iw];
            if (best_i < 0 || v > best) {
              best = v;
              best_i = ih * s.in_w + iw;
            }
          }
        const int64_t o = (p * OH + oh) * OW + ow;
        CAPTURE(p, oh, ow, y[o], best, arg[o], best_i);
        REQUIRE(double(y[o]) == best);
        REQUIRE(arg[o] == best_i);
        REQUIRE(argr[o] == best_i);
        REQUIRE(double(yr[o]) == std::max(best, 0.0));
        want_dx[p * s.in_h * s.in_w + best_i] += double(dy[o]);
      }
  for (size_t i = 0; i < dx.size(); ++i) {
    CAPTURE(i, dx[i], want_dx[i]);
    REQUIRE(double(dx[i]) == want_dx[i]);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("max_pool2d picks the first maximum and backward routes the gradient to it",
                   "[pool]", float, double) {
  std::mt19937 rng(3);
  const int saved = cpu::get_num_threads();
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    //                                     N  C  H   W  kh kw sh sw ph pw
    for (const Pool2dShape& s : {Pool2dShape{64, 10, 24, 24, 2, 2, 2, 2},  // tutorial
                                      Pool2dShape{2, 20, 8, 8, 2, 2, 2, 2},
                                      Pool2dShape{1, 1, 1, 1, 1, 1, 1, 1},
                                      Pool2dShape{2, 3, 7, 5, 3, 3, 2, 2, 1, 1},   // overlap+pad
                                      Pool2dShape{1, 2, 9, 10, 3, 2, 1, 1, 0, 1},  // stride 1
                                      Pool2dShape{3, 1, 5, 7, 2, 3, 3, 2},         // floor mode
                                      Pool2dShape{2, 3, 9, 37, 2, 2, 2, 2},        // 2x2: 16 + tail 2
                                      Pool2dShape{1, 2, 5, 66, 2, 2, 2, 2},        // 2x2: 16 + 16 + 1
                                      Pool2dShape{1, 1, 2, 3, 2, 2, 2, 2}}) {      // 2x2: one output
      CAPTURE(threads, s.batch, s.channels, s.in_h, s.in_w, s.kernel_h, s.kernel_w, s.stride_h,
              s.stride_w, s.pad_h, s.pad_w);
      check_pool<TestType>(s, rng);
    }
  }
  cpu::set_num_threads(saved);
}

TEMPLATE_TEST_CASE("max_pool2d propagates NaN as the maximum, like PyTorch", "[pool]", float,
                   double) {
  const TestType nan = std::numeric_limits<TestType>::quiet_NaN();
  const TestType inf = std::numeric_limits<TestType>::infinity();
  std::vector<TestType> x = {1, nan, 3, 4, -inf, -inf, -inf, -inf};  // two 2x2 windows of a 2x4 image
  const Pool2dShape s{1, 1, 2, 4, 2, 2, 2, 2};
  std::vector<TestType> y(2), yr(2);
  std::vector<int64_t> arg(2), argr(2);
  cpu::max_pool2d_forward<TestType>(x.data(), y.data(), arg.data(), s);
  cpu::max_pool2d_relu_forward<TestType>(x.data(), yr.data(), argr.data(), s);
  CHECK(std::isnan(y[0]));
  CHECK(arg[0] == 1);
  CHECK(std::isnan(yr[0]));
  CHECK(y[1] == 4);
  CHECK(arg[1] == 3);
  CHECK(yr[1] == 4);
  // A window of -inf only keeps its first element's index.
  std::vector<TestType> z(4, -inf);
  const Pool2dShape one{1, 1, 2, 2, 2, 2, 2, 2};
  cpu::max_pool2d_forward<TestType>(z.data(), y.data(), arg.data(), one);
  CHECK(y[0] == -inf);
  CHECK(arg[0] == 0);
}

TEMPLATE_TEST_CASE("max_pool2d 2x2 keeps the last NaN of a window and its index on wide rows",
                   "[pool]", float, double) {
  // The 2x2 / stride 2 pool has a vectorised float path; it must agree with the scalar rule
  // (take v when v > best or v is NaN) on every lane, tails included.
  const Pool2dShape s{2, 2, 6, 45, 2, 2, 2, 2};
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.batch * s.channels;
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> dist(-8, 8);
  const TestType nan = std::numeric_limits<TestType>::quiet_NaN();
  std::vector<TestType> x(planes * s.in_h * s.in_w);
  for (auto& v : x) v = dist(rng) == 8 ? nan : TestType(dist(rng));
  std::vector<TestType> y(planes * OH * OW), yr(y.size());
  std::vector<int64_t> arg(y.size()), argr(y.size());
  cpu::max_pool2d_forward<TestType>(x.data(), y.data(), arg.data(), s);
  cpu::max_pool2d_relu_forward<TestType>(x.data(), yr.data(), argr.data(), s);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const TestType* plane = x.data() + p * s.in_h * s.in_w;
        const int64_t i0 = 2 * oh * s.in_w + 2 * ow;
        const int64_t idx[4] = {i0, i0 + 1, i0 + s.in_w, i0 + s.in_w + 1};
        TestType best = plane[i0];
        int64_t best_i = i0;
        for (int u = 1; u < 4; ++u) {
          const TestType v = plane[idx[u]];
          if (v > best || std::isnan(v)) {
            best = v;
            best_i = idx[u];
          }
        }
        const int64_t o = (p * OH + oh) * OW + ow;
        CAPTURE(p, oh, ow, y[o], best, arg[o], best_i);
        REQUIRE(arg[o] == best_i);
        REQUIRE(argr[o] == best_i);
        if (std::isnan(best)) {
          REQUIRE(std::isnan(y[o]));
          REQUIRE(std::isnan(yr[o]));
        } else {
          REQUIRE(y[o] == best);
          REQUIRE(yr[o] == (best < 0 ? TestType(0) : best));
        }
      }
}
