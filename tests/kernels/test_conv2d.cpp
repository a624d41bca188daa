// conv2d forward and backwards against a naive direct convolution in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/threading.h"

namespace cpu = ember::kernels::cpu;
using ember::kernels::Conv2dShape;

namespace {

struct Reference {
  std::vector<double> y, dx, dw, db;
};

// Direct loops: y = conv(x, w) + b, and the gradients of sum(y * dy), with channel groups.
template <class T>
Reference naive(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                const std::vector<T>& dy, const Conv2dShape& s) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  Reference r;
  r.y.assign(s.batch * s.out_channels * OH * OW, 0.0);
  r.dx.assign(x.size(), 0.0);
  r.dw.assign(w.size(), 0.0);
  r.db.assign(s.out_channels, 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t k = 0; k < s.out_channels; ++k)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t yi = ((n * s.out_channels + k) * OH + oh) * OW + ow;
          double sum = b[k];
          const double g = dy[yi];
          r.db[k] += g;
          // Output channel k reads the input channels of its group, [c0, c0 + group_in).
          const int64_t c0 = k / s.group_out() * s.group_in();
          for (int64_t c = c0; c < c0 + s.group_in(); ++c)
            for (int64_t kh = 0; kh < s.kernel_h; ++kh)
              for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const int64_t ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
                const int64_t iw = ow * s.stride_w - s.pad_w + kw * s.dilation_w;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                const int64_t xi = ((n * s.in_channels + c) * s.in_h + ih) * s.in_w + iw;
                const int64_t wi = ((k * s.group_in() + c - c0) * s.kernel_h + kh) * s.kernel_w + kw;
                sum += double(x[xi]) * double(w[wi]);
                r.dx[xi] += g * double(w[wi]);
                r.dw[wi] += g * double(x[xi]);
              }
          r.y[yi] = sum;
        }
  return r;
}

template <class T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  REQUIRE(got.size() == want.size());
  double scale = 1.0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(double(got[i]) - want[i]) <= tol * scale)) {
      CAPTURE(what, i, got[i], want[i]);
      FAIL("conv2d result differs from the naive convolution");
    }
  }
}

template <class T>
void check_conv(const Conv2dShape& s, bool with_bias, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t OH = s.out_h(), OW = s.out_w();
  std::vector<T> x(s.batch * s.in_channels * s.in_h * s.in_w);
  std::vector<T> w(s.out_channels * s.group_in() * s.kernel_h * s.kernel_w);
  std::vector<T> b(s.out_channels, T(0)), dy(s.batch * s.out_channels * OH * OW);
  for (auto& v : x) v = T(dist(rng));
  for (auto& v : w) v = T(dist(rng));
  for (auto& v : dy) v = T(dist(rng));
  if (with_bias)
    for (auto& v : b) v = T(dist(rng));
  const Reference ref = naive(x, w, b, dy, s);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

  // NaN in the workspace: a kernel that reads scratch it did not write shows up in the results.
  std::vector<T> ws(std::max({cpu::conv2d_forward_workspace(s), cpu::conv2d_backward_input_workspace(s),
                              cpu::conv2d_backward_weight_workspace(s)}),
                    T(NAN));
  std::vector<T> y(dy.size(), T(NAN)), dx(x.size(), T(NAN)), dw(w.size(), T(NAN));
  std::vector<T> db(s.out_channels, T(NAN));
  cpu::conv2d_forward<T>(x.data(), w.data(), with_bias ? b.data() : nullptr, y.data(), s, ws.data());
  expect_close(y, ref.y, tol, "y");
  cpu::conv2d_backward_input<T>(dy.data(), w.data(), dx.data(), s, ws.data());
  expect_close(dx, ref.dx, tol, "dx");
  cpu::conv2d_backward_weight<T>(dy.data(), x.data(), dw.data(), with_bias ? db.data() : nullptr,
                                 s, ws.data());
  expect_close(dw, ref.dw, tol, "dw");
  if (with_bias) expect_close(db, ref.db, tol, "dbias");
}

std::vector<Conv2dShape> shapes() {
  std::vector<Conv2dShape> out;
  //              batch C  H   W  K  R  S  sh sw ph pw dh dw
  out.push_back({2, 1, 28, 28, 10, 5, 5});                    // tutorial conv1
  out.push_back({3, 10, 12, 12, 20, 5, 5});                   // tutorial conv2
  out.push_back({1, 1, 1, 1, 1, 1, 1});                       // everything 1
  out.push_back({1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1});           // same padding, non-square
  out.push_back({2, 2, 9, 8, 3, 3, 2, 2, 3, 1, 0});           // strides and uneven padding
  out.push_back({3, 2, 10, 11, 5, 3, 3, 1, 2, 2, 1, 2, 3});   // dilation
  out.push_back({5, 4, 6, 6, 7, 1, 1});                       // 1x1
  out.push_back({4, 3, 5, 5, 2, 5, 5, 1, 1, 2, 2});           // kernel as big as the image
  out.push_back({2, 1, 4, 4, 1, 2, 2, 3, 3});                 // stride larger than the kernel
  out.push_back({37, 3, 10, 10, 4, 3, 3});                    // several image groups and a partial one
  out.push_back({9, 2, 7, 7, 3, 3, 3, 2, 2, 1, 1});           // groups with stride and padding
  out.push_back({2, 3, 9, 37, 4, 3, 3, 1, 1, 2, 1, 2, 3});    // stride 1, padded and dilated, W > 16
  out.push_back({2, 2, 6, 20, 3, 2, 7, 1, 1, 0, 4});          // padding wider than half the kernel
  // Stride 2 across (the vectorised im2col / col2im rows): OW 35 = 16 + 16 + 3, OW 9 (one
  // vector, both halves of the input-gradient's spread), ResNet-8's downsampling convs.
  out.push_back({2, 3, 9, 70, 4, 3, 3, 2, 2, 1, 1});
  out.push_back({3, 2, 5, 18, 3, 3, 2, 2, 2, 0, 1});
  out.push_back({2, 16, 28, 28, 32, 3, 3, 2, 2, 1, 1});
  out.push_back({2, 32, 14, 14, 64, 1, 1, 2, 2});
  return out;
}

// Stride 1, no dilation: the direct float kernels (grid positions (OH - 1) * W + OW in vectors
// of 16 or 8, blocks of at most 10 output channels), padded shapes on a zero-bordered copy.
std::vector<Conv2dShape> direct_shapes() {
  std::vector<Conv2dShape> out;
  //              batch C  H   W  K  R  S
  out.push_back({1, 10, 12, 12, 20, 5, 5});   // tutorial conv2, batch 1
  out.push_back({3, 2, 9, 21, 5, 3, 3});      // OW 19: odd, one vector and a 3-lane tail
  out.push_back({2, 1, 6, 16, 10, 1, 1});     // grid 96 = 3 pairs of 16 exactly, K 10
  out.push_back({2, 3, 5, 40, 11, 2, 7});     // OW 34, K 11: blocks of 6 and 5
  out.push_back({2, 17, 6, 37, 23, 2, 3});    // many channels: C 17, K 23 (8 + 8 + 7)
  out.push_back({3, 1, 5, 5, 1, 5, 5});       // one output per image: a 1-lane grid
  out.push_back({2, 3, 7, 1, 4, 1, 1});       // W 1: every grid position is valid
  out.push_back({1, 4, 3, 33, 31, 3, 1});     // one output row of 33, K 31 (8 + 8 + 8 + 7)
  out.push_back({5, 2, 4, 9, 3, 2, 9});       // kernel as wide as the input: OW 1
  // Padded: the direct kernels on a zero-bordered copy (conv2d_direct_padded.cpp).
  //              batch C  H   W  K  R  S  sh sw ph pw
  out.push_back({2, 16, 28, 28, 16, 3, 3, 1, 1, 1, 1});  // ResNet-8's first block
  out.push_back({3, 5, 9, 21, 7, 3, 3, 1, 1, 1, 1});     // OW 21, K 7
  out.push_back({2, 3, 7, 8, 4, 3, 5, 1, 1, 2, 1});      // pad_h = R - 1, pad_w < S - 1
  out.push_back({2, 2, 6, 9, 3, 3, 3, 1, 1, 0, 2});      // padding in one dimension only
  out.push_back({2, 2, 5, 5, 3, 3, 3, 1, 1, 3, 0});      // pad_h > R - 1: dx takes im2col
  out.push_back({1, 12, 1, 1, 11, 1, 1, 1, 1, 1, 1});    // a 1x1 image padded to 3x3
  // Channel groups: every group's slices of x, w and y in place.
  //              batch C  H   W  K  R  S  sh sw ph pw dh dw groups
  out.push_back({2, 8, 9, 11, 12, 3, 3, 1, 1, 1, 1, 1, 1, 4});     // groups 4: 2 in, 3 out each
  out.push_back({3, 8, 10, 19, 24, 3, 3, 1, 1, 1, 1, 1, 1, 2});    // 12 out a group: 2 or 3 blocks each
  out.push_back({2, 8, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4});       // 1 out a group: dx's conv is depthwise
  out.push_back({3, 6, 7, 20, 4, 3, 1, 1, 1, 0, 0, 1, 1, 2});      // groups, no padding
  out.push_back({2, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 4});   // a ResNeXt-style 3x3
  out.push_back({2, 6, 5, 5, 6, 3, 3, 1, 1, 3, 0, 1, 1, 3});       // pad_h > R - 1: dx takes im2col
  // 3-wide kernels with K / groups a multiple of 16: the weight gradient by output channels
  // (conv2d_direct_weight_channels.cpp) on AVX-512.
  out.push_back({3, 5, 9, 21, 16, 2, 3});                          // 1 vector, OW 19 (4 + 3 tail), 10 pairs
  out.push_back({2, 3, 7, 10, 48, 3, 3});                          // 3 vectors, 9 pairs of 2
  out.push_back({2, 4, 6, 9, 80, 3, 3, 1, 1, 1, 1});               // 5 vectors: blocks of 2 and 3
  out.push_back({37, 3, 10, 10, 32, 3, 3});                        // image groups of 27 and 10
  out.push_back({3, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1});              // ResNet-8's last block
  out.push_back({2, 32, 9, 11, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2});    // 16 out a group
  // The forward by output channels (conv2d_direct_forward_channels.cpp), strides 1 and 2; with C /
  // groups a multiple of 16 the input gradient's conv takes it too.
  out.push_back({2, 3, 5, 30, 16, 3, 3});                          // OW 28: two segments of 14
  out.push_back({2, 32, 6, 21, 80, 3, 3, 1, 1, 1, 1});             // blocks of 2 and 3 vectors, OW 21
  out.push_back({3, 16, 28, 28, 32, 3, 3, 2, 2, 1, 1});            // ResNet-8's strided 3x3
  out.push_back({2, 5, 15, 23, 16, 3, 3, 2, 2});                   // stride 2 unpadded, OW 11
  out.push_back({2, 4, 9, 40, 48, 2, 3, 2, 2, 1, 1});              // 3 vectors, OW 20: 7 + 7 + 6
  out.push_back({2, 6, 11, 11, 64, 3, 3, 2, 2, 1, 1, 1, 1, 2});    // grouped, stride 2
  out.push_back({1, 16, 3, 3, 16, 3, 3, 2, 2});                    // one output per image
  out.push_back({2, 3, 9, 9, 16, 3, 3, 2, 1, 1, 1});               // strides differ: im2col
  // The strided input gradient by input channels (conv2d_direct_input_grad_strided.cpp): 3x3
  // stride 2, pad 0 or 1, C / groups a multiple of 16 (ResNet-8's strided 3x3 above is one).
  //              batch C  H   W  K  R  S  sh sw ph pw dh dw groups
  out.push_back({2, 16, 13, 15, 24, 3, 3, 2, 2, 1, 1});            // odd H and W, K 24
  out.push_back({2, 32, 14, 14, 64, 3, 3, 2, 2, 1, 1});            // ResNet-8's 32 -> 64: 2 vectors
  out.push_back({2, 80, 9, 30, 16, 3, 3, 2, 2, 0, 0});             // 5 vectors (2 + 3), unpadded, W 30
  out.push_back({2, 16, 8, 29, 16, 3, 3, 2, 2, 1, 0});             // pad in H only, W 29: 3 segments
  out.push_back({2, 48, 12, 10, 16, 3, 3, 2, 2, 0, 1});            // 3 vectors, pad in W only
  out.push_back({2, 64, 9, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 2});     // grouped: 32 in, 16 out a group
  out.push_back({3, 16, 1, 2, 16, 3, 3, 2, 2, 1, 1});              // a 1 x 2 image: one dy position
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("conv2d forward and backwards match the naive convolution", "[conv2d]", float,
                   double) {
  std::mt19937 rng(11);
  const int saved = cpu::get_num_threads();
  for (int threads : {1, 2, 3}) {
    cpu::set_num_threads(threads);
    for (const auto& s : shapes()) {
      CAPTURE(threads, s.batch, s.in_channels, s.in_h, s.in_w, s.out_channels, s.kernel_h,
              s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w, s.dilation_h, s.dilation_w);
      check_conv<TestType>(s, true, rng);
      check_conv<TestType>(s, false, rng);
    }
  }
  cpu::set_num_threads(saved);
}

TEST_CASE("conv2d backward_weight is bit-for-bit reproducible for a fixed thread count",
          "[conv2d]") {
  const Conv2dShape s{64, 10, 12, 12, 20, 5, 5};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(s.batch * 10 * 144), dy(s.batch * 20 * 64);
  for (auto& v : x) v = dist(rng);
  for (auto& v : dy) v = dist(rng);
  const int saved = cpu::get_num_threads();
  cpu::set_num_threads(2);
  std::vector<float> ws(cpu::conv2d_backward_weight_workspace(s));
  std::vector<float> dw1(20 * 250), dw2(20 * 250), db1(20), db2(20);
  cpu::conv2d_backward_weight<float>(dy.data(), x.data(), dw1.data(), db1.data(), s, ws.data());
  cpu::conv2d_backward_weight<float>(dy.data(), x.data(), dw2.data(), db2.data(), s, ws.data());
  cpu::set_num_threads(saved);
  CHECK(dw1 == dw2);
  CHECK(db1 == db2);
}

TEST_CASE("conv2d on the direct kernels matches the naive convolution on edge shapes",
          "[conv2d]") {
  std::mt19937 rng(17);
  const int saved = cpu::get_num_threads();
  for (int threads : {1, 2, 3}) {
    cpu::set_num_threads(threads);
    for (const auto& s : direct_shapes()) {
      CAPTURE(threads, s.batch, s.in_channels, s.in_h, s.in_w, s.out_channels, s.kernel_h,
              s.kernel_w);
      check_conv<float>(s, true, rng);
      check_conv<float>(s, false, rng);
    }
  }
  cpu::set_num_threads(saved);
}

TEST_CASE("conv2d with stride 1 and padding on a batch larger than one padded chunk",
          "[conv2d]") {
  // 16 x 258 x 258 padded floats an image: chunks of 3 images of the 16 MB limit, so the batch of
  // 5 takes two chunks: of x (forward, weight gradient, which adds the second chunk's partial
  // sums) with 16 input channels, of dy (input gradient) with 16 output channels.
  std::mt19937 rng(29);
  const int saved = cpu::get_num_threads();
  cpu::set_num_threads(2);
  check_conv<float>(Conv2dShape{5, 16, 256, 256, 2, 3, 3, 1, 1, 1, 1}, true, rng);
  check_conv<float>(Conv2dShape{5, 1, 256, 256, 16, 3, 3, 1, 1, 1, 1}, true, rng);
  check_conv<float>(Conv2dShape{5, 16, 256, 256, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2}, true, rng);  // grouped
  cpu::set_num_threads(saved);
}

TEST_CASE("conv2d on the direct kernels gives the same bits for every thread count", "[conv2d]") {
  // The bias gradient too, on every path: it sums the batch's two halves apart (Note [image
  // shards]), as the unpadded weight gradient does. 4 threads put two on each half.
  // Unpadded (the tutorial's conv2: forward and weight gradient direct), padded (ResNet's 3x3:
  // all three direct, dx as a conv of the padded dy), grouped (ResNeXt's 3x3) and strided
  // (ResNet's downsampling 3x3: the forward by output channels, dx by input channels).
  for (const Conv2dShape& s : {Conv2dShape{7, 10, 12, 12, 20, 5, 5},
                              Conv2dShape{5, 16, 14, 14, 16, 3, 3, 1, 1, 1, 1},
                              Conv2dShape{5, 32, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, 4},
                              Conv2dShape{5, 16, 14, 14, 32, 3, 3, 2, 2, 1, 1},
                              // Fewer weight-gradient tasks than threads (ResNet's stem: one; two):
                              // threads split the image shards, 3 threads across a shard's tasks.
                              Conv2dShape{5, 1, 14, 14, 16, 3, 3, 1, 1, 1, 1},
                              Conv2dShape{5, 2, 9, 9, 32, 3, 3, 1, 1, 1, 1}}) {
    CAPTURE(s.in_channels, s.pad_h, s.groups);
    // Without AVX-512 or AVX2 (or with EMBER_GEMM_ISA=scalar) these take the im2col path,
    // deterministic only for a fixed thread count (checked above).
    const bool direct_weight = cpu::direct_weight_grad_applies(s) ||
                               cpu::direct_padded_weight_grad_applies(s);
    const bool direct_input = cpu::direct_input_grad_applies(s) || cpu::strided_input_grad_applies(s);
    const int64_t K = s.out_channels, P = s.out_h() * s.out_w();
    const int64_t x_size = s.batch * s.in_channels * s.in_h * s.in_w;
    const int64_t w_size = K * s.group_in() * s.kernel_h * s.kernel_w;
    std::mt19937 rng(23);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> x(x_size), w(w_size), b(K), dy(s.batch * K * P);
    for (auto* v : {&x, &w, &b, &dy})
      for (auto& e : *v) e = dist(rng);
    const int saved = cpu::get_num_threads();
    std::vector<float> y1, dw1, dx1, db1;
    for (int threads : {1, 2, 3, 4}) {
      cpu::set_num_threads(threads);
      std::vector<float> ws(std::max({cpu::conv2d_forward_workspace(s), cpu::conv2d_backward_weight_workspace(s),
                                      cpu::conv2d_backward_input_workspace(s)}));
      std::vector<float> y(dy.size(), NAN), dw(w_size, NAN), dx(x_size, NAN), db(K, NAN);
      cpu::conv2d_forward<float>(x.data(), w.data(), b.data(), y.data(), s, ws.data());
      cpu::conv2d_backward_weight<float>(dy.data(), x.data(), dw.data(), db.data(), s, ws.data());
      cpu::conv2d_backward_input<float>(dy.data(), w.data(), dx.data(), s, ws.data());
      if (y1.empty()) y1 = y, dw1 = dw, dx1 = dx, db1 = db;
      CAPTURE(threads);
      CHECK(y == y1);
      CHECK(db == db1);
      if (direct_weight) CHECK(dw == dw1);
      if (direct_input) CHECK(dx == dx1);
    }
    cpu::set_num_threads(saved);
  }
}
