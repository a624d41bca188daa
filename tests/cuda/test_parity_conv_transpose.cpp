// CPU-vs-CUDA parity of conv_transpose2d (conv2d's kernels mirrored, hand-written and cuDNN):
// a stride-2 upsampling with output_padding, DCGAN's 4x4 kernel, groups, dilation with an
// output_padding not below the stride, with and without bias; forward and every gradient.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

TEST_CASE("conv_transpose2d matches the CPU on CUDA, forward and backward") {
  struct Case {
    std::string name;
    Shape input, weight;
    ember::nn::ConvTranspose2dOptions options;
  };
  const std::vector<Case> cases{
      {"upsample s2 p1 op1", {2, 8, 5, 5}, {8, 4, 3, 3}, {.stride = 2, .padding = 1, .output_padding = 1}},
      {"dcgan 4x4 s2 p1", {2, 6, 4, 4}, {6, 3, 4, 4}, {.stride = 2, .padding = 1}},
      {"groups 2, (1, 2) stride", {3, 4, 5, 4}, {4, 3, 3, 2}, {.stride = {1, 2}, .padding = {1, 0}, .groups = 2}},
      {"dilation 2, output_padding 1", {2, 3, 6, 5}, {3, 5, 3, 3}, {.padding = 2, .output_padding = 1, .dilation = 2}},
  };
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Case& c : cases) {
      for (bool with_bias : {true, false}) {
        const int64_t out_channels = c.weight[1] * c.options.groups;
        parity::check_parity({.name = "conv_transpose2d " + c.name + (with_bias ? "" : " no bias") + dtype_suffix(dtype),
                              .make_inputs = [=] {
                                return std::vector<Tensor>{random_input(c.input, dtype), random_input(c.weight, dtype),
                                                           random_input({out_channels}, dtype)};
                              },
                              .op = [=](const std::vector<Tensor>& in) {
                                return F::conv_transpose2d(in[0], in[1], with_bias ? in[2] : Tensor(), c.options);
                              },
                              .differentiable = with_bias ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0, 1},
                              .tolerance = tolerance_for(dtype),
                              .vendor_too = true});
      }
    }
  }
}
