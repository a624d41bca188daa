// CPU-vs-CUDA parity of matmul, linear and conv2d, forward and every gradient, on the hand-written
// kernels and on cuBLAS / cuDNN: odd sizes (tails in every tile dimension), transposed and
// narrowed views (the GEMM's strided and scalar-load paths), broadcast batches, stride, padding
// and dilation, float32 and float64.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/cuda/runtime.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using ember::Shape;
using ember::Tensor;
using parity::ParityCase;
using parity::dtype_suffix;
using parity::random_input;
using parity::tolerance_for;
namespace F = ember::nn::functional;

namespace {

std::string dims(std::initializer_list<int64_t> v) {
  std::string out;
  for (int64_t x : v) out += (out.empty() ? "" : "x") + std::to_string(x);
  return out;
}

ParityCase make_case(std::string name, std::vector<Shape> shapes, ember::DType dtype,
                     std::function<Tensor(const std::vector<Tensor>&)> op) {
  ParityCase c;
  c.name = name + dtype_suffix(dtype);
  c.make_inputs = [shapes, dtype] {
    std::vector<Tensor> inputs;
    for (const Shape& s : shapes) inputs.push_back(random_input(s, dtype));
    return inputs;
  };
  c.op = std::move(op);
  for (size_t i = 0; i < shapes.size(); ++i) c.differentiable.push_back(i);
  c.tolerance = tolerance_for(dtype);
  c.vendor_too = true;
  return c;
}

struct Mnk {
  int64_t m, n, k;
};

const Mnk kProducts[] = {{1, 1, 1},     {7, 5, 13},    {129, 257, 65}, {64, 10, 784}, {33, 1, 17},
                         {1, 7, 300},   {128, 128, 128}, {130, 3, 9},  {5, 131, 4},   {64, 320, 10}};

std::vector<ParityCase> matmul_cases() {
  std::vector<ParityCase> cases;
  for (ember::DType dt : parity::kFloatingDTypes) {
    for (const Mnk& p : kProducts) {
      const std::string mnk = dims({p.m, p.n, p.k});
      // a [m, k] @ b [k, n]
      cases.push_back(make_case("matmul 2-D " + mnk, {{p.m, p.k}, {p.k, p.n}}, dt,
                                [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
      // transposed views of both operands: no copy, the kernels read them transposed
      cases.push_back(make_case("matmul 2-D transposed views " + mnk, {{p.k, p.m}, {p.n, p.k}}, dt,
                                [](const std::vector<Tensor>& in) {
                                  return ember::matmul(in[0].t(), in[1].t());
                                }));
      cases.push_back(make_case("matmul 2-D b transposed " + mnk, {{p.m, p.k}, {p.n, p.k}}, dt,
                                [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1].t()); }));
      // a narrowed view: leading dimension k + 3 and an offset of 1 element (scalar loads)
      const int64_t k = p.k;
      cases.push_back(make_case("matmul 2-D narrowed view " + mnk, {{p.m, p.k + 3}, {p.k, p.n}}, dt,
                                [k](const std::vector<Tensor>& in) {
                                  return ember::matmul(in[0].narrow(1, 1, k), in[1]);
                                }));
    }
    // batched 3-D, 3-D @ 2-D, 2-D @ 3-D, a broadcast batch of 1, transposed batched views
    cases.push_back(make_case("matmul 3-D 3x7x13x5", {{3, 7, 13}, {3, 13, 5}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 3-D 4x129x65x130", {{4, 129, 65}, {4, 65, 130}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 3-D @ 2-D 5x9x17x11", {{5, 9, 17}, {17, 11}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 2-D @ 3-D 9x17 5x17x11", {{9, 17}, {5, 17, 11}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 3-D broadcast batch 1", {{1, 6, 7}, {4, 7, 3}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 3-D transposed views 3x33x21x19", {{3, 21, 33}, {3, 19, 21}}, dt,
                              [](const std::vector<Tensor>& in) {
                                return ember::matmul(in[0].transpose(1, 2), in[1].transpose(1, 2));
                              }));
    cases.push_back(make_case("matmul 1-D @ 2-D", {{13}, {13, 6}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
    cases.push_back(make_case("matmul 1-D @ 1-D", {{37}, {37}}, dt,
                              [](const std::vector<Tensor>& in) { return ember::matmul(in[0], in[1]); }));
  }
  return cases;
}

std::vector<ParityCase> linear_cases() {
  std::vector<ParityCase> cases;
  struct Linear {
    int64_t rows, in, out;
  };
  // {4, 0, 3} and {4, 5, 0}: no input or no output features (leading dimensions clamped to 1).
  const Linear shapes[] = {{64, 320, 10}, {7, 13, 5}, {1, 1, 1}, {129, 65, 257}, {3, 784, 33},
                           {4, 0, 3},     {4, 5, 0}};
  for (ember::DType dt : parity::kFloatingDTypes) {
    for (const Linear& l : shapes) {
      const std::string name = dims({l.rows, l.in, l.out});
      cases.push_back(make_case("linear with bias " + name, {{l.rows, l.in}, {l.out, l.in}, {l.out}}, dt,
                                [](const std::vector<Tensor>& in) { return F::linear(in[0], in[1], in[2]); }));
      cases.push_back(make_case("linear without bias " + name, {{l.rows, l.in}, {l.out, l.in}}, dt,
                                [](const std::vector<Tensor>& in) { return F::linear(in[0], in[1]); }));
    }
    cases.push_back(make_case("linear 3-D input 2x5x7 -> 4", {{2, 5, 7}, {4, 7}, {4}}, dt,
                              [](const std::vector<Tensor>& in) { return F::linear(in[0], in[1], in[2]); }));
  }
  return cases;
}

// Each of stride, pad and dilation is {h, w}: F::Conv2dOptions takes a number or a pair.
struct Conv {
  int64_t n, c, h, w, k, r, s;
  F::ExpandingArray<2> stride, pad, dilation;
  bool bias;
  bool float64_too;
};

const Conv kConvs[] = {
    {2, 3, 7, 9, 7, 3, 3, 1, 0, 1, true, true},      // C=3, K=7, odd spatial sizes
    {2, 3, 7, 9, 7, 3, 3, 2, 1, 1, true, true},      // stride 2
    {1, 1, 5, 5, 1, 1, 1, 1, 0, 1, false, true},     // C=1, K=1, 1x1
    {3, 1, 11, 13, 7, 3, 5, 1, 2, 1, true, true},    // C=1, padding 2, non-square kernel
    {2, 3, 15, 15, 7, 3, 3, 2, 2, 2, false, true},   // stride 2, padding 2, dilation 2
    {2, 3, 10, 9, 4, 3, 3, 1, 1, 2, true, true},     // dilation 2
    {4, 5, 9, 8, 9, 2, 2, 3, 1, 1, true, true},      // stride 3, even kernel
    {2, 8, 9, 9, 16, 1, 1, 2, 0, 1, false, true},    // 1x1, stride 2
    {2, 4, 6, 6, 130, 3, 3, 1, 1, 1, true, true},    // K = 130: 128-row tiles plus a tail
    {3, 70, 5, 7, 3, 3, 3, 1, 1, 1, true, true},     // C = 70: backward-input rows past 64
    {64, 1, 28, 28, 10, 5, 5, 1, 0, 1, true, true},  // the tutorial's conv1
    {64, 10, 12, 12, 20, 5, 5, 1, 0, 1, true, true}, // the tutorial's conv2
    // Non-square: a 3x1 kernel with stride (2, 1) and padding (1, 0) (PyTorch's
    // Conv2d(4, 4, (3, 1), stride=(2, 1), padding=(1, 0))); then every option different per axis.
    {2, 4, 9, 7, 4, 3, 1, {2, 1}, {1, 0}, {1, 1}, true, true},
    {2, 3, 10, 12, 5, 2, 3, {1, 2}, {2, 1}, {2, 1}, true, true},
    {1, 2, 8, 11, 3, 1, 4, {3, 1}, {0, 2}, {1, 3}, false, true},
    {8, 64, 56, 56, 64, 3, 3, 1, 1, 1, true, false}, // a ResNet-style layer
};

std::vector<ParityCase> conv_cases() {
  std::vector<ParityCase> cases;
  for (ember::DType dt : parity::kFloatingDTypes) {
    for (const Conv& v : kConvs) {
      if (dt == ember::kFloat64 && !v.float64_too) continue;
      std::string name = "conv2d x" + dims({v.n, v.c, v.h, v.w}) + " w" + dims({v.k, v.c, v.r, v.s}) +
                         " stride " + dims({v.stride[0], v.stride[1]}) + " pad " + dims({v.pad[0], v.pad[1]}) +
                         " dilation " + dims({v.dilation[0], v.dilation[1]}) + (v.bias ? " bias" : " no bias");
      std::vector<Shape> shapes{{v.n, v.c, v.h, v.w}, {v.k, v.c, v.r, v.s}};
      if (v.bias) shapes.push_back({v.k});
      F::Conv2dOptions options{.stride = v.stride, .padding = v.pad, .dilation = v.dilation};
      cases.push_back(make_case(name, shapes, dt, [options](const std::vector<Tensor>& in) {
        return F::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), options);
      }));
    }
  }
  return cases;
}

}  // namespace

TEST_CASE("matmul on CUDA matches the CPU (hand-written and cuBLAS)", "[cuda][parity][matmul]") {
  for (const ParityCase& c : matmul_cases()) {
    SECTION(c.name) { parity::check_parity(c); }
  }
}

TEST_CASE("linear on CUDA matches the CPU (hand-written and cuBLAS)", "[cuda][parity][linear]") {
  for (const ParityCase& c : linear_cases()) {
    SECTION(c.name) { parity::check_parity(c); }
  }
}

TEST_CASE("conv2d on CUDA matches the CPU (hand-written and cuDNN)", "[cuda][parity][conv2d]") {
  for (const ParityCase& c : conv_cases()) {
    SECTION(c.name) { parity::check_parity(c); }
  }
}

TEST_CASE("gemm on CUDA with K = 0 writes zeros", "[cuda][matmul]") {
  for (ember::Backend backend : parity::backends_under_test(/*vendor_too=*/true)) {
    ember::BackendGuard use(backend);
    ember::cuda::set_poison_allocations(true);
    Tensor a = ember::empty({5, 0}, {.device = ember::Device::cuda(0)});
    Tensor b = ember::empty({0, 7}, {.device = ember::Device::cuda(0)});
    Tensor out = ember::matmul(a, b).cpu();
    ember::cuda::set_poison_allocations(false);
    INFO(ember::backend_name(backend));
    REQUIRE(out.sizes() == Shape{5, 7});
    for (int64_t i = 0; i < 5; ++i) {
      for (int64_t j = 0; j < 7; ++j) CHECK(out.at<float>({i, j}) == 0.0f);
    }
  }
}

// The backward runs the kernels of the backend its forward ran: a forward under the hand-written
// GEMM keeps it for the backward even under Backend::Vendor (which on the emulated GPUs, having no
// cuBLAS, would throw), so the gradients are bit for bit those of an all-hand-written step.
TEST_CASE("matmul's backward runs on the backend of its forward, whatever the backend is by then",
          "[cuda][matmul]") {
  const Tensor a0 = random_input({3, 7, 5}).cuda(), b0 = random_input({5, 4}).cuda();
  auto gradients = [&](ember::Backend backward_backend) {
    Tensor a = a0.detach().requires_grad_(), b = b0.detach().requires_grad_();
    Tensor y;
    {
      ember::BackendGuard forward(ember::Backend::Handwritten);
      y = ember::matmul(a, b);
    }
    ember::BackendGuard backward(backward_backend);
    ember::sum(y).backward();
    return std::vector<Tensor>{a.grad().cpu(), b.grad().cpu()};
  };
  const auto want = gradients(ember::Backend::Handwritten);
  const auto got = gradients(ember::Backend::Vendor);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("gradient " << i);
    CHECK(ember::allclose(got[i], want[i], 0.0, 0.0));
  }
}
