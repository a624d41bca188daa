// CPU-vs-CUDA parity of cat, stack, split and chunk (core/ops_shape.cpp): forward and input
// gradients in float32 and float64, over dims, negative dims, non-contiguous inputs, mixed
// dtypes and integer tensors. The ops run on the copy kernels, so this checks those kernels at
// the strided layouts cat writes (narrow views of the output) and the gradients read.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "parity.h"

using ember::DType;
using ember::kFloat32;
using ember::kFloat64;
using ember::kInt64;
using ember::Shape;
using ember::Tensor;
using parity::ParityCase;

namespace {

using Inputs = std::vector<Tensor>;

Tensor floats(const Shape& s, DType d) { return parity::random_input(s, d); }

}  // namespace

TEST_CASE("parity: cat along every dim, negative dims and non-contiguous inputs") {
  std::vector<ParityCase> cases;
  for (DType d : parity::kFloatingDTypes) {
    const std::string sfx = parity::dtype_suffix(d);
    const double tol = parity::tolerance_for(d);
    for (int64_t dim = 0; dim < 4; ++dim) {
      cases.push_back({"cat dim " + std::to_string(dim) + sfx,
                       [=] {
                         Shape a{2, 3, 5, 4}, b{2, 3, 5, 4};
                         b[dim] = 7;
                         return Inputs{floats(a, d), floats(b, d), floats(a, d)};
                       },
                       [dim](const Inputs& x) { return ember::cat(x, dim); }, {0, 1, 2}, tol});
    }
    cases.push_back({"cat dim -3, ResNet-like feature maps" + sfx,
                     [=] { return Inputs{floats({2, 16, 9, 9}, d), floats({2, 8, 9, 9}, d)}; },
                     [](const Inputs& x) { return ember::cat(x, -3); }, {0, 1}, tol});
    cases.push_back({"cat transposed, narrowed and expanded" + sfx,
                     [=] { return Inputs{floats({6, 5}, d), floats({5, 9}, d), floats({1, 5}, d)}; },
                     [](const Inputs& x) {
                       return ember::cat({x[0].t(), x[1].narrow(1, 2, 4), x[2].t().expand({5, 3})}, 1);
                     },
                     {0, 1, 2}, tol});
    cases.push_back({"cat skips an empty 1-D tensor" + sfx,
                     [=] { return Inputs{floats({0}, d), floats({3, 4}, d), floats({2, 4}, d)}; },
                     [](const Inputs& x) { return ember::cat(x, 0); }, {1, 2}, tol});
    cases.push_back({"stack dim 1 and -1" + sfx,
                     [=] { return Inputs{floats({4, 6}, d), floats({4, 6}, d), floats({6, 4}, d)}; },
                     [](const Inputs& x) {
                       return ember::cat({ember::stack({x[0], x[1], x[2].t()}, 1).reshape({4, 18}),
                                          ember::stack({x[1], x[0]}, -1).reshape({4, 12})}, 1);
                     },
                     {0, 1, 2}, tol});
    cases.push_back({"split by size and by sizes, recombined" + sfx,
                     [=] { return Inputs{floats({7, 10}, d)}; },
                     [](const Inputs& x) {
                       auto by_size = ember::split(x[0], 3, 0);               // 3, 3, 1 rows
                       auto by_sizes = ember::split(x[0], std::vector<int64_t>{4, 1, 5}, -1);
                       Tensor rows = ember::cat({ember::mul(by_size[2], 2.0), by_size[0]}, 0);  // [4, 10]
                       return ember::cat({rows.reshape({-1}), by_sizes[2].reshape({-1})}, 0);
                     },
                     {0}, tol});
    cases.push_back({"chunk of a transposed input" + sfx,
                     [=] { return Inputs{floats({9, 4}, d)}; },
                     [](const Inputs& x) {
                       auto c = ember::chunk(x[0].t(), 3, 1);  // 3 pieces of [4, 3]
                       return ember::add(ember::mul(c[0], c[1]), c[2]);
                     },
                     {0}, tol});
  }
  // float32 + float64 -> float64; each gradient comes back in its input's dtype.
  cases.push_back({"cat float32 and float64",
                   [] { return Inputs{floats({3, 4}, kFloat32), floats({2, 4}, kFloat64)}; },
                   [](const Inputs& x) { return ember::cat(x, 0); }, {0, 1}, 1e-6});
  // Integer tensors (no gradient), compared through an exact cast.
  cases.push_back({"cat int64",
                   [] { return Inputs{ember::mul(floats({3, 5}, kFloat64), 8.0).to(kInt64), ember::arange(10).reshape({2, 5})}; },
                   [](const Inputs& x) { return ember::cat(x, 0).to(kFloat64); }, {}, 0.5});
  for (const ParityCase& c : cases) parity::check_parity(c);
}

TEST_CASE("parity: cat gives the same error on CUDA as on the CPU, and refuses mixed devices") {
  Tensor a = ember::zeros({2, 3, 4}).cuda(), b = ember::zeros({2, 5, 5}).cuda();
  CHECK_THROWS_WITH(ember::cat({a, b}, 1),
                    Catch::Contains("cat: tensors must have the same shape except in dim 1, got [2, 3, 4] and [2, 5, 5]"));
  CHECK_THROWS_WITH(ember::cat({a, ember::zeros({2, 3, 4})}, 0),
                    Catch::Contains("cat: expected all tensors on one device, got cuda:0 (tensor 0) and cpu (tensor 1)"));
}
