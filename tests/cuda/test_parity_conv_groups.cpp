// CPU-vs-CUDA parity of conv2d with groups (issue 17): the general grouped path (the implicit GEMM
// per channel group) and the depthwise kernels, forward and every gradient, float32 and float64,
// on the hand-written kernels and cuDNN where it runs.
#include "parity.h"

#include <string>
#include <vector>

#include "ember/nn/functional.h"

namespace F = ember::nn::functional;
using ember::Shape;
using ember::Tensor;
using parity::ParityCase;

namespace {

struct GroupedConv {
  int64_t n, c, h, w, k, r, s, groups, stride, pad, dilation;
  bool bias;
};

const GroupedConv kCases[] = {
    {2, 6, 7, 9, 4, 3, 3, 2, 1, 1, 1, true},      // groups 2, odd spatial sizes
    {3, 9, 8, 7, 15, 3, 2, 3, 2, 1, 1, false},    // groups 3, odd channels per group, stride 2
    {1, 8, 9, 9, 8, 1, 1, 4, 1, 0, 1, true},      // groups 4, 1x1, batch 1
    {2, 16, 14, 14, 16, 3, 3, 16, 1, 1, 1, true}, // depthwise 3x3 stride 1
    {2, 16, 14, 13, 16, 3, 3, 16, 2, 1, 1, true}, // depthwise 3x3 stride 2, odd width
    {2, 5, 9, 10, 10, 3, 3, 5, 1, 1, 1, false},   // depthwise, multiplier 2
    {1, 7, 13, 12, 7, 5, 5, 7, 1, 4, 2, true},    // depthwise 5x5 dilated, batch 1
};

std::string dims(std::initializer_list<int64_t> v) { return ember::shape_str(Shape(v)); }

std::vector<ParityCase> cases() {
  std::vector<ParityCase> out;
  for (ember::DType dt : parity::kFloatingDTypes) {
    for (const GroupedConv& v : kCases) {
      ParityCase c;
      c.name = "conv2d groups " + std::to_string(v.groups) + " x" + dims({v.n, v.c, v.h, v.w}) + " w" +
               dims({v.k, v.c / v.groups, v.r, v.s}) + " stride " + std::to_string(v.stride) + " pad " +
               std::to_string(v.pad) + " dilation " + std::to_string(v.dilation) +
               (v.bias ? " bias" : " no bias") + parity::dtype_suffix(dt);
      std::vector<Shape> shapes{{v.n, v.c, v.h, v.w}, {v.k, v.c / v.groups, v.r, v.s}};
      if (v.bias) shapes.push_back({v.k});
      c.make_inputs = [shapes, dt] {
        std::vector<Tensor> inputs;
        for (const Shape& s : shapes) inputs.push_back(parity::random_input(s, dt));
        return inputs;
      };
      const F::Conv2dOptions options{.stride = v.stride, .padding = v.pad, .dilation = v.dilation,
                                     .groups = v.groups};
      c.op = [options](const std::vector<Tensor>& in) {
        return F::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), options);
      };
      for (size_t i = 0; i < shapes.size(); ++i) c.differentiable.push_back(i);
      c.tolerance = parity::tolerance_for(dt);
      c.vendor_too = true;
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("grouped and depthwise conv2d on CUDA match the CPU", "[cuda][parity][conv2d][conv_groups]") {
  for (const ParityCase& c : cases()) {
    SECTION(c.name) { parity::check_parity(c); }
  }
}
