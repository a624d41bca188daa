// CPU-vs-CUDA parity of avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and max_pool2d with
// ceil_mode and dilation (which the vendor backend hands to the hand-written kernels): forward
// and input gradient, float32 and float64.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "parity.h"

using namespace parity;  // and through it ember::Shape and ember::Tensor
namespace F = ember::nn::functional;

namespace {

void check(const std::string& name, ember::DType dtype, const Shape& shape,
           std::function<Tensor(const Tensor&)> op, bool vendor_too = false) {
  parity::check_parity({.name = name + " " + ember::shape_str(shape) + dtype_suffix(dtype),
                        .make_inputs = [=] { return std::vector<Tensor>{random_input(shape, dtype)}; },
                        .op = [op](const std::vector<Tensor>& in) { return op(in[0]); },
                        .differentiable = {0},
                        .tolerance = tolerance_for(dtype),
                        .vendor_too = vendor_too});
}

}  // namespace

TEST_CASE("avg_pool2d matches the CPU on CUDA: padding counted or not, divisor_override, ceil mode") {
  for (ember::DType dtype : parity::kFloatingDTypes) {
    check("avg_pool2d k3 s2 p1", dtype, {4, 16, 14, 14},
          [](const Tensor& x) { return F::avg_pool2d(x, 3, {.stride = 2, .padding = 1}); });
    check("avg_pool2d k3 s2 p1 ceil exclude_pad", dtype, {2, 3, 9, 11}, [](const Tensor& x) {
      return F::avg_pool2d(x, 3, {.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false});
    });
    check("avg_pool2d k(3,2) s(2,3) p1 divisor 5", dtype, {2, 3, 8, 9}, [](const Tensor& x) {
      return F::avg_pool2d(x, {3, 2}, {.stride = {2, 3}, .padding = 1, .divisor_override = 5});
    });
    check("avg_pool2d k2 3-D", dtype, {3, 7, 9}, [](const Tensor& x) { return F::avg_pool2d(x, 2); });
    check("avg_pool2d k3 s1 transposed", dtype, {1, 2, 6, 5},
          [](const Tensor& x) { return F::avg_pool2d(x.transpose(2, 3), 3, {.stride = 1, .padding = 1}); });
  }
}

TEST_CASE("adaptive_avg_pool2d and adaptive_max_pool2d match the CPU on CUDA: global and uneven windows") {
  for (ember::DType dtype : parity::kFloatingDTypes) {
    check("adaptive_avg_pool2d 1", dtype, {16, 64, 7, 7}, [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 1); });
    check("adaptive_avg_pool2d 3", dtype, {2, 3, 7, 10}, [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 3); });
    check("adaptive_avg_pool2d (5,4)", dtype, {2, 3, 11, 9},
          [](const Tensor& x) { return F::adaptive_avg_pool2d(x, {5, 4}); });
    check("adaptive_max_pool2d 1", dtype, {4, 8, 7, 7}, [](const Tensor& x) { return F::adaptive_max_pool2d(x, 1); });
    check("adaptive_max_pool2d 3", dtype, {2, 3, 7, 10}, [](const Tensor& x) { return F::adaptive_max_pool2d(x, 3); });
    check("adaptive_max_pool2d (5,4) 3-D", dtype, {3, 11, 9},
          [](const Tensor& x) { return F::adaptive_max_pool2d(x, {5, 4}); });
  }
}

TEST_CASE("max_pool2d with ceil_mode and dilation matches the CPU on CUDA, hand-written and vendor backends") {
  for (ember::DType dtype : parity::kFloatingDTypes) {
    check("max_pool2d k3 s2 p1 ceil", dtype, {2, 3, 9, 11},
          [](const Tensor& x) { return F::max_pool2d(x, 3, {.stride = 2, .padding = 1, .ceil_mode = true}); }, true);
    check("max_pool2d k2 ceil (same shape as floor)", dtype, {2, 3, 8, 8},
          [](const Tensor& x) { return F::max_pool2d(x, 2, {.ceil_mode = true}); }, true);
    check("max_pool2d k3 s2 p1 d2", dtype, {2, 3, 13, 12},
          [](const Tensor& x) { return F::max_pool2d(x, 3, {.stride = 2, .padding = 1, .dilation = 2}); }, true);
    check("max_pool2d k(2,3) s(3,2) p1 d(3,2) ceil", dtype, {1, 4, 10, 15}, [](const Tensor& x) {
      return F::max_pool2d(x, {2, 3}, {.stride = {3, 2}, .padding = 1, .dilation = {3, 2}, .ceil_mode = true});
    }, true);
  }
}
