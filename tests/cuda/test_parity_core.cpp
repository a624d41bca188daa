// CPU-vs-CUDA parity of the core tensor ops (core/ops.h but matmul): element-wise arithmetic with
// broadcasting, strided / transposed / expanded operands, integer and bool dtypes, comparisons,
// where, casts, in-place ops, every reduction over each dim (negative dims, keepdim on and off,
// full reductions) and sum_to, in float32 and float64, gradients included where they exist.
//
// parity::check_parity draws a float gradient for the output, so ops whose result is an integer
// or bool tensor are compared through an exact cast to float64 (indices, integer sums, masks).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/core/generator.h"
#include "parity.h"

using ember::DType;
using ember::kBool;
using ember::kFloat32;
using ember::kFloat64;
using ember::kInt64;
using ember::kUInt8;
using ember::Shape;
using ember::Tensor;
using parity::ParityCase;

namespace {

using Inputs = std::vector<Tensor>;
using Op = std::function<Tensor(const Inputs&)>;

std::string shape_name(const Shape& s) { return ember::shape_str(s); }
std::string dtype_str(DType d) { return std::string(ember::dtype_name(d)); }

// Random inputs of each kind: floats away from 0; positive floats (log, sqrt, pow); small
// integers with many ties; uint8 in [0, 8]; bools.
Tensor floats(const Shape& s, DType d = kFloat32) { return parity::random_input(s, d); }
Tensor positive(const Shape& s, DType d = kFloat32) { return ember::add(ember::abs(floats(s, d)), 0.1); }
Tensor integers(const Shape& s, DType d) {
  Tensor v = ember::mul(floats(s, kFloat64), 4.0);
  if (d == kBool) return ember::gt(v, 0.0);
  if (d == kUInt8) v = ember::abs(v);
  return v.to(kInt64).to(d);  // whole numbers in [-8, 8] (uint8: [0, 8]) in any dtype
}
Tensor any_of(const Shape& s, DType d) { return ember::is_floating(d) ? floats(s, d) : integers(s, d); }

// Exact view of an integer / bool result as float64 for the comparison.
Tensor as_f64(const Tensor& t) { return t.to(kFloat64); }

const std::vector<DType> kFloating{kFloat32, kFloat64};
const std::vector<DType> kAllDTypes{kFloat32, kFloat64, kInt64, kUInt8, kBool};

// Broadcasting shape pairs: equal, odd sizes, size-1 stretching both ways, 0-dim scalars, [1].
const std::vector<std::pair<Shape, Shape>> kBroadcastPairs{
    {{7}, {7}},          {{1000}, {1000}},         {{4097}, {4097}},  {{3, 1, 5}, {4, 1}},
    {{}, {1000}},        {{33, 17}, {}},           {{1}, {4097}},     {{33, 17}, {17}},
    {{2, 3, 4, 5}, {1, 3, 1, 5}}, {{5, 1}, {1, 6}}, {{1}, {1}},        {{}, {}}};

void run_all(const std::vector<ParityCase>& cases) {
  for (const ParityCase& c : cases) parity::check_parity(c);
}

// Float binary op over every broadcast pair and floating dtype, gradients on both sides.
std::vector<ParityCase> binary_float_cases(const std::string& name, Op op, bool positive_base = false) {
  std::vector<ParityCase> cases;
  for (DType d : kFloating) {
    for (const auto& [sa, sb] : kBroadcastPairs) {
      Shape a_shape = sa, b_shape = sb;
      cases.push_back({name + " " + shape_name(sa) + " " + shape_name(sb) + " " + dtype_str(d),
                       [=] { return Inputs{positive_base ? positive(a_shape, d) : floats(a_shape, d),
                                           floats(b_shape, d)}; },
                       op, {0, 1}, d == kFloat64 ? 1e-10 : 1e-4});
    }
    // Strided operands: a transposed view against a column, an expanded row, a narrowed slice.
    cases.push_back({name + " transposed " + dtype_str(d),
                     [=] { return Inputs{positive_base ? positive({17, 33}, d) : floats({17, 33}, d), floats({33, 1}, d)}; },
                     [op](const Inputs& x) { return op({x[0].t(), x[1]}); }, {0, 1}, d == kFloat64 ? 1e-10 : 1e-4});
    cases.push_back({name + " expanded " + dtype_str(d),
                     [=] { return Inputs{positive_base ? positive({1, 9}, d) : floats({1, 9}, d), floats({6, 9}, d)}; },
                     [op](const Inputs& x) { return op({x[0].expand({6, 9}), x[1].t().t()}); }, {0, 1},
                     d == kFloat64 ? 1e-10 : 1e-4});
    cases.push_back({name + " narrowed and permuted " + dtype_str(d),
                     [=] { return Inputs{positive_base ? positive({4, 10, 6}, d) : floats({4, 10, 6}, d), floats({6, 3, 4}, d)}; },
                     [op](const Inputs& x) { return op({x[0].narrow(1, 2, 3), x[1].permute({2, 1, 0})}); }, {0, 1},
                     d == kFloat64 ? 1e-10 : 1e-4});
  }
  return cases;
}

}  // namespace

TEST_CASE("parity: add, sub, mul, div, pow, maximum, minimum broadcast over strided operands") {
  run_all(binary_float_cases("add", [](const Inputs& x) { return ember::add(x[0], x[1]); }));
  run_all(binary_float_cases("add alpha", [](const Inputs& x) { return ember::add(x[0], x[1], -2.5); }));
  run_all(binary_float_cases("sub", [](const Inputs& x) { return ember::sub(x[0], x[1]); }));
  run_all(binary_float_cases("mul", [](const Inputs& x) { return ember::mul(x[0], x[1]); }));
  run_all(binary_float_cases("div", [](const Inputs& x) { return ember::div(x[0], x[1]); }));
  run_all(binary_float_cases("pow", [](const Inputs& x) { return ember::pow(x[0], x[1]); }, true));
  run_all(binary_float_cases("maximum", [](const Inputs& x) { return ember::maximum(x[0], x[1]); }));
  run_all(binary_float_cases("minimum", [](const Inputs& x) { return ember::minimum(x[0], x[1]); }));
}

TEST_CASE("parity: maximum and minimum split the gradient evenly on ties") {
  std::vector<ParityCase> cases;
  for (DType d : kFloating) {
    for (bool take_max : {true, false}) {
      cases.push_back({std::string(take_max ? "maximum" : "minimum") + " ties " + dtype_str(d),
                       [=] {
                         Tensor a = ember::tensor({1.0, 2.0, 3.0, -1.0, 0.5, 7.0, 2.0}).to(d);
                         Tensor b = ember::tensor({1.0, 3.0, 3.0, -2.0, 0.5, 7.0, 1.0}).to(d);
                         return Inputs{a, b};
                       },
                       [take_max](const Inputs& x) { return take_max ? ember::maximum(x[0], x[1]) : ember::minimum(x[0], x[1]); },
                       {0, 1}});
    }
  }
  run_all(cases);
}

TEST_CASE("parity: arithmetic with a scalar") {
  std::vector<ParityCase> cases;
  const std::vector<Shape> shapes{{}, {1}, {7}, {1000}, {4097}, {33, 17}};
  for (DType d : kFloating) {
    double tol = d == kFloat64 ? 1e-10 : 1e-4;
    for (const Shape& s : shapes) {
      auto row = [&](const std::string& name, Op op, bool pos = false) {
        cases.push_back({name + " " + shape_name(s) + " " + dtype_str(d),
                         [=] { return Inputs{pos ? positive(s, d) : floats(s, d)}; }, op, {0}, tol});
      };
      row("add scalar", [](const Inputs& x) { return ember::add(x[0], 2.5); });
      row("sub scalar", [](const Inputs& x) { return ember::sub(x[0], 1.0); });
      row("mul scalar", [](const Inputs& x) { return ember::mul(x[0], -1.5); });
      row("div scalar", [](const Inputs& x) { return ember::div(x[0], 3.0); });
      row("rsub scalar", [](const Inputs& x) { return 2.0 - x[0]; });
      row("pow 2", [](const Inputs& x) { return ember::pow(x[0], 2.0); });
      row("pow 3 of negatives", [](const Inputs& x) { return ember::pow(x[0], 3.0); });
      row("pow 0.5", [](const Inputs& x) { return ember::pow(x[0], 0.5); }, true);
      row("pow -1.5", [](const Inputs& x) { return ember::pow(x[0], -1.5); }, true);
      row("pow 0", [](const Inputs& x) { return ember::pow(x[0], 0.0); });
      row("pow of transposed", [](const Inputs& x) { return ember::pow(x[0].dim() == 2 ? x[0].t() : x[0], 2.0); });
    }
  }
  run_all(cases);
}

TEST_CASE("parity: neg, exp, log, sqrt, abs on contiguous and strided inputs") {
  std::vector<ParityCase> cases;
  const std::vector<Shape> shapes{{}, {1}, {7}, {1000}, {4097}, {33, 17}, {2, 3, 4, 5}};
  for (DType d : kFloating) {
    double tol = d == kFloat64 ? 1e-10 : 1e-4;
    for (const Shape& s : shapes) {
      auto row = [&](const std::string& name, Op op, bool pos = false) {
        // Strided variant: a transposed (2-D) or permuted (4-D) view of the input.
        auto strided = [op](const Inputs& x) {
          Tensor v = x[0];
          if (v.dim() == 2) v = v.t();
          if (v.dim() == 4) v = v.permute({3, 1, 0, 2});
          return op({v});
        };
        cases.push_back({name + " " + shape_name(s) + " " + dtype_str(d),
                         [=] { return Inputs{pos ? positive(s, d) : floats(s, d)}; }, op, {0}, tol});
        cases.push_back({name + " strided " + shape_name(s) + " " + dtype_str(d),
                         [=] { return Inputs{pos ? positive(s, d) : floats(s, d)}; }, strided, {0}, tol});
      };
      row("neg", [](const Inputs& x) { return ember::neg(x[0]); });
      row("exp", [](const Inputs& x) { return ember::exp(x[0]); });
      row("log", [](const Inputs& x) { return ember::log(x[0]); }, true);
      row("sqrt", [](const Inputs& x) { return ember::sqrt(x[0]); }, true);
      row("abs", [](const Inputs& x) { return ember::abs(x[0]); });
    }
  }
  run_all(cases);
}

TEST_CASE("parity: clamp, var, std and masked_fill on contiguous and strided inputs, with gradients") {
  std::vector<ParityCase> cases;
  for (DType d : kFloating) {
    const double tol = d == kFloat64 ? 1e-10 : 1e-4;
    for (const Shape& s : std::vector<Shape>{{7}, {4097}, {33, 17}, {2, 3, 4, 5}}) {
      auto input = [=] { return Inputs{floats(s, d)}; };
      const std::string suffix = " " + shape_name(s) + " " + dtype_str(d);
      cases.push_back({"clamp" + suffix, input, [](const Inputs& x) { return ember::clamp(x[0], -0.5, 0.7); }, {0}, tol});
      cases.push_back({"clamp_min (of a transposed view when 2-D)" + suffix, input,
                       [](const Inputs& x) { return ember::clamp_min(x[0].dim() == 2 ? x[0].t() : x[0], 0.2); }, {0}, tol});
      cases.push_back({"clamp_max" + suffix, input, [](const Inputs& x) { return ember::clamp_max(x[0], -0.1); }, {0}, tol});
      cases.push_back({"var over dim 0" + suffix, input, [](const Inputs& x) { return ember::var(x[0], {0}); }, {0}, tol});
      cases.push_back({"std of all, biased" + suffix, input,
                       [](const Inputs& x) { return ember::std(x[0], {}, false); }, {0}, tol});
      cases.push_back({"masked_fill" + suffix, input, [](const Inputs& x) {
        return ember::masked_fill(x[0], ember::gt(x[0].detach(), 0.3), -2.0);
      }, {0}, tol});
    }
  }
  run_all(cases);
}

TEST_CASE("parity: integer and bool arithmetic promotes as on the CPU") {
  std::vector<ParityCase> cases;
  const std::vector<std::pair<Shape, Shape>> pairs{{{7}, {7}}, {{3, 1, 5}, {4, 1}}, {{}, {1000}}, {{4097}, {1}}};
  for (DType da : kAllDTypes) {
    for (DType db : kAllDTypes) {
      for (const auto& [sa, sb] : pairs) {
        Shape a_shape = sa, b_shape = sb;
        std::string tag = shape_name(sa) + " " + dtype_str(da) + " " + shape_name(sb) + " " + dtype_str(db);
        auto make = [=] { return Inputs{any_of(a_shape, da), any_of(b_shape, db)}; };
        cases.push_back({"add " + tag, make, [](const Inputs& x) { return as_f64(ember::add(x[0], x[1])); }});
        cases.push_back({"mul " + tag, make, [](const Inputs& x) { return as_f64(ember::mul(x[0], x[1])); }});
        cases.push_back({"maximum " + tag, make, [](const Inputs& x) { return as_f64(ember::maximum(x[0], x[1])); }});
        cases.push_back({"minimum " + tag, make, [](const Inputs& x) { return as_f64(ember::minimum(x[0], x[1])); }});
        if (da != kUInt8 && db != kUInt8 && da != kBool && db != kBool) {
          cases.push_back({"sub " + tag, make, [](const Inputs& x) { return as_f64(ember::sub(x[0], x[1])); }});
        }
        // div of integers is a float division (the divisor kept nonzero).
        cases.push_back({"div " + tag, [=] { return Inputs{any_of(a_shape, da), ember::add(ember::abs(any_of(b_shape, db).to(kFloat64)), 1.0).to(db == kBool ? kUInt8 : db)}; },
                         [](const Inputs& x) { return as_f64(ember::div(x[0], x[1])); }, {}, 1e-6});
      }
    }
  }
  for (DType d : {kInt64, kUInt8}) {
    cases.push_back({"add int scalar " + dtype_str(d), [=] { return Inputs{integers({33, 17}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::add(x[0].t(), 3.0)); }});
    cases.push_back({"mul by a fractional scalar promotes " + dtype_str(d), [=] { return Inputs{integers({33, 17}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::mul(x[0], 0.5)); }});
    cases.push_back({"abs " + dtype_str(d), [=] { return Inputs{integers({1000}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::abs(x[0])); }});
    cases.push_back({"exp of integers is float " + dtype_str(d), [=] { return Inputs{integers({1000}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::exp(x[0])); }, {}, 1e-6});
    cases.push_back({"sqrt of integers is float " + dtype_str(d), [=] { return Inputs{ember::abs(integers({1000}, d))}; },
                     [](const Inputs& x) { return as_f64(ember::sqrt(x[0])); }, {}, 1e-6});
    cases.push_back({"pow of integers is float " + dtype_str(d), [=] { return Inputs{integers({1000}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::pow(x[0], 2.0)); }, {}, 1e-6});
  }
  cases.push_back({"neg int64", [] { return Inputs{integers({4097}, kInt64)}; },
                   [](const Inputs& x) { return as_f64(ember::neg(x[0])); }});
  cases.push_back({"neg uint8 wraps", [] { return Inputs{integers({1000}, kUInt8)}; },
                   [](const Inputs& x) { return as_f64(ember::neg(x[0])); }});
  run_all(cases);
}

TEST_CASE("parity: comparisons of every dtype, broadcast, against tensors and scalars") {
  std::vector<ParityCase> cases;
  using Cmp = Tensor (*)(const Tensor&, const Tensor&);
  using CmpScalar = Tensor (*)(const Tensor&, double);
  const std::vector<std::tuple<std::string, Cmp, CmpScalar>> ops{
      {"eq", ember::eq, ember::eq}, {"ne", ember::ne, ember::ne}, {"lt", ember::lt, ember::lt},
      {"le", ember::le, ember::le}, {"gt", ember::gt, ember::gt}, {"ge", ember::ge, ember::ge}};
  const std::vector<std::pair<Shape, Shape>> pairs{{{7}, {7}}, {{3, 1, 5}, {4, 1}}, {{}, {4097}}, {{1}, {1000}}, {{33, 17}, {17}}};
  for (const auto& [name, cmp, cmp_scalar] : ops) {
    for (DType d : kAllDTypes) {
      for (const auto& [sa, sb] : pairs) {
        Shape a_shape = sa, b_shape = sb;
        Cmp f = cmp;
        // Integers drawn from a small range, so eq / le / ge meet many ties.
        cases.push_back({name + " " + shape_name(sa) + " " + shape_name(sb) + " " + dtype_str(d),
                         [=] { return Inputs{integers(a_shape, d), integers(b_shape, d)}; },
                         [f](const Inputs& x) { return as_f64(f(x[0], x[1])); }});
      }
      CmpScalar g = cmp_scalar;
      cases.push_back({name + " scalar transposed " + dtype_str(d), [=] { return Inputs{integers({17, 33}, d)}; },
                       [g](const Inputs& x) { return as_f64(g(x[0].t(), 1.0)); }});
      cases.push_back({name + " fractional scalar " + dtype_str(d), [=] { return Inputs{integers({1000}, d)}; },
                       [g](const Inputs& x) { return as_f64(g(x[0], 0.5)); }});
    }
    Cmp f = cmp;
    cases.push_back({name + " mixed float32 / int64", [] { return Inputs{integers({100}, kFloat32), integers({100}, kInt64)}; },
                     [f](const Inputs& x) { return as_f64(f(x[0], x[1])); }});
  }
  run_all(cases);
}

TEST_CASE("parity: where broadcasts condition and both branches, with gradients") {
  std::vector<ParityCase> cases;
  const std::vector<std::tuple<Shape, Shape, Shape>> shapes{
      {{7}, {7}, {7}}, {{3, 1, 5}, {4, 1}, {}}, {{4097}, {1}, {4097}}, {{}, {33, 17}, {17}}, {{1000}, {}, {}}};
  for (DType cond_dtype : {kBool, kUInt8}) {
    for (DType d : kFloating) {
      for (const auto& [sc, sa, sb] : shapes) {
        Shape c_shape = sc, a_shape = sa, b_shape = sb;
        cases.push_back({"where " + shape_name(sc) + " " + shape_name(sa) + " " + shape_name(sb) + " " + dtype_str(d) +
                             " condition " + dtype_str(cond_dtype),
                         [=] {
                           Tensor c = integers(c_shape, kBool);
                           if (cond_dtype == kUInt8) c = c.to(kUInt8);
                           return Inputs{c, floats(a_shape, d), floats(b_shape, d)};
                         },
                         [](const Inputs& x) { return ember::where(x[0], x[1], x[2]); }, {1, 2},
                         d == kFloat64 ? 1e-10 : 1e-4});
      }
      cases.push_back({"where transposed condition and branch " + dtype_str(d) + " " + dtype_str(cond_dtype),
                       [=] {
                         Tensor c = integers({17, 33}, kBool);
                         if (cond_dtype == kUInt8) c = c.to(kUInt8);
                         return Inputs{c, floats({17, 33}, d), floats({33, 17}, d)};
                       },
                       [](const Inputs& x) { return ember::where(x[0].t(), x[1].t(), x[2]); }, {1, 2}});
    }
  }
  for (DType d : {kInt64, kUInt8, kBool}) {
    cases.push_back({"where of " + dtype_str(d), [=] { return Inputs{integers({3, 1, 5}, kBool), integers({4, 1}, d), integers({5}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::where(x[0], x[1], x[2])); }});
  }
  cases.push_back({"where promotes float32 and float64", [] { return Inputs{integers({9}, kBool), floats({9}), floats({9}, kFloat64)}; },
                   [](const Inputs& x) { return ember::where(x[0], x[1], x[2]); }, {1, 2}});
  run_all(cases);
}

TEST_CASE("parity: casts, contiguous copies, clone and in-place ops") {
  std::vector<ParityCase> cases;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      // Negative floats to uint8 are undefined in C++; those rows cast non-negative values.
      bool non_negative = to == kUInt8 && ember::is_floating(from);
      cases.push_back({"cast " + dtype_str(from) + " to " + dtype_str(to),
                       [=] { return Inputs{non_negative ? positive({33, 17}, from) : any_of({33, 17}, from)}; },
                       [to](const Inputs& x) { return as_f64(x[0].t().to(to)); }});
    }
  }
  cases.push_back({"float to bool is x != 0 (0.5 is true)", [] { return Inputs{ember::tensor({0.0, 0.5, -0.25, 2.0, -0.0})}; },
                   [](const Inputs& x) { return as_f64(x[0].to(kBool)); }});
  for (DType d : kFloating) {
    cases.push_back({"contiguous of a permuted view " + dtype_str(d), [=] { return Inputs{floats({2, 3, 4, 5}, d)}; },
                     [](const Inputs& x) { return x[0].permute({2, 0, 3, 1}).contiguous(); }, {0}});
    cases.push_back({"clone of an expanded view " + dtype_str(d), [=] { return Inputs{floats({1, 7}, d)}; },
                     [](const Inputs& x) { return x[0].expand({5, 7}).clone(); }, {0}});
    cases.push_back({"reshape of a transposed view " + dtype_str(d), [=] { return Inputs{floats({6, 4}, d)}; },
                     [](const Inputs& x) { return x[0].t().reshape({-1}); }, {0}});
    cases.push_back({"add_ with alpha into a clone " + dtype_str(d), [=] { return Inputs{floats({33, 17}, d), floats({17}, d)}; },
                     [](const Inputs& x) {
                       Tensor y = x[0].detach().clone();
                       y.add_(x[1], 0.5);
                       return y;
                     }});
    cases.push_back({"mul_ of a clone " + dtype_str(d), [=] { return Inputs{floats({4097}, d)}; },
                     [](const Inputs& x) {
                       Tensor y = x[0].detach().clone();
                       y.mul_(-3.0);
                       return y;
                     }});
    cases.push_back({"fill_ of a narrowed (non-contiguous) view " + dtype_str(d), [=] { return Inputs{floats({7, 9}, d)}; },
                     [](const Inputs& x) {
                       Tensor y = x[0].detach().clone();
                       y.narrow(1, 2, 4).fill_(3.25);
                       y.select(0, 5).zero_();
                       return y;
                     }});
  }
  run_all(cases);
}

TEST_CASE("parity: sum and mean over each dim, negative dims, dim lists, keepdim, full reductions") {
  std::vector<ParityCase> cases;
  const std::vector<Shape> shapes{{}, {1}, {7}, {1000}, {4097}, {33, 17}, {2, 3, 4, 5}, {3, 0, 4}};
  for (DType d : kFloating) {
    double tol = d == kFloat64 ? 1e-10 : 1e-4;
    for (const Shape& s : shapes) {
      std::vector<Shape> dim_lists{{}};  // {} = every dim
      int64_t n = static_cast<int64_t>(s.size());
      for (int64_t k = 0; k < n; ++k) dim_lists.push_back({k});
      if (n >= 1) dim_lists.push_back({-1});
      if (n >= 2) dim_lists.push_back({0, -1});
      if (n >= 3) dim_lists.push_back({-n, 1});
      if (n >= 4) dim_lists.push_back({1, 2, 3});
      for (const Shape& dims : dim_lists) {
        for (bool keepdim : {false, true}) {
          std::string tag = shape_name(s) + " dims " + shape_name(dims) + (keepdim ? " keepdim " : " ") + dtype_str(d);
          cases.push_back({"sum " + tag, [=] { return Inputs{floats(s, d)}; },
                           [=](const Inputs& x) { return ember::sum(x[0], dims, keepdim); }, {0}, tol});
          if (s != Shape{3, 0, 4} || !dims.empty()) {
            cases.push_back({"mean " + tag, [=] { return Inputs{floats(s, d)}; },
                             [=](const Inputs& x) { return ember::mean(x[0], dims, keepdim); }, {0}, tol});
          }
        }
      }
    }
    // Strided inputs and large reductions (the split two-pass path; Note [Deterministic reductions]).
    cases.push_back({"sum of a transposed view over dim 0 " + dtype_str(d), [=] { return Inputs{floats({17, 33}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0].t(), {0}); }, {0}, tol});
    cases.push_back({"sum of a transposed view over dim 1 " + dtype_str(d), [=] { return Inputs{floats({17, 33}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0].t(), {1}); }, {0}, tol});
    cases.push_back({"sum of a permuted view over two dims " + dtype_str(d), [=] { return Inputs{floats({2, 3, 4, 5}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0].permute({3, 0, 2, 1}), {1, 3}, true); }, {0}, tol});
    cases.push_back({"sum of an expanded view " + dtype_str(d), [=] { return Inputs{floats({1, 33}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0].expand({100, 33}), {0}); }, {0}, tol});
    cases.push_back({"full sum of 262144 " + dtype_str(d), [=] { return Inputs{floats({262144}, d)}; },
                     [](const Inputs& x) { return x[0].sum(); }, {0}, tol});
    cases.push_back({"sum over the long inner dim of [64, 100000] " + dtype_str(d), [=] { return Inputs{floats({64, 100000}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0], {1}); }, {0}, tol});
    cases.push_back({"sum over the long outer dim of [100000, 3] " + dtype_str(d), [=] { return Inputs{floats({100000, 3}, d)}; },
                     [](const Inputs& x) { return ember::sum(x[0], {0}); }, {0}, tol});
    cases.push_back({"mean of [64, 10] over the batch " + dtype_str(d), [=] { return Inputs{floats({64, 10}, d)}; },
                     [](const Inputs& x) { return ember::mean(x[0], {0}); }, {0}, tol});
  }
  for (DType d : {kInt64, kUInt8, kBool}) {
    for (const Shape& s : std::vector<Shape>{{7}, {4097}, {33, 17}, {2, 3, 4, 5}, {262144}}) {
      cases.push_back({"sum of " + dtype_str(d) + " is int64 " + shape_name(s), [=] { return Inputs{integers(s, d)}; },
                       [](const Inputs& x) { return as_f64(x[0].sum()); }});
      cases.push_back({"sum of " + dtype_str(d) + " over dim -1 " + shape_name(s), [=] { return Inputs{integers(s, d)}; },
                       [](const Inputs& x) { return as_f64(ember::sum(x[0], {-1}, true)); }});
    }
  }
  run_all(cases);
}

TEST_CASE("parity: max, min, argmax, argmin over each dim, and full max / min") {
  std::vector<ParityCase> cases;
  const std::vector<Shape> shapes{{}, {1}, {7}, {1000}, {4097}, {33, 17}, {2, 3, 4, 5}, {262144}};
  for (DType d : {kFloat32, kFloat64, kInt64, kUInt8}) {
    bool floating = ember::is_floating(d);
    for (const Shape& s : shapes) {
      int64_t n = static_cast<int64_t>(s.size());
      std::vector<int64_t> dims;
      for (int64_t k = 0; k < n; ++k) dims.push_back(k);
      dims.push_back(-1);
      for (int64_t dim : dims) {
        for (bool keepdim : {false, true}) {
          std::string tag = shape_name(s) + " dim " + std::to_string(dim) + (keepdim ? " keepdim " : " ") + dtype_str(d);
          // Floats are distinct; integers repeat, so ties pick the first index as on the CPU.
          auto make = [=] { return Inputs{any_of(s, d)}; };
          std::vector<size_t> grad_inputs = floating ? std::vector<size_t>{0} : std::vector<size_t>{};
          cases.push_back({"max values " + tag, make,
                           [=](const Inputs& x) { return as_f64(std::get<0>(ember::max(x[0], dim, keepdim))); }, grad_inputs});
          cases.push_back({"max indices " + tag, make,
                           [=](const Inputs& x) { return as_f64(std::get<1>(ember::max(x[0], dim, keepdim))); }});
          cases.push_back({"min values " + tag, make,
                           [=](const Inputs& x) { return as_f64(std::get<0>(ember::min(x[0], dim, keepdim))); }, grad_inputs});
          cases.push_back({"min indices " + tag, make,
                           [=](const Inputs& x) { return as_f64(std::get<1>(ember::min(x[0], dim, keepdim))); }});
          cases.push_back({"argmax " + tag, make, [=](const Inputs& x) { return as_f64(ember::argmax(x[0], dim, keepdim)); }});
          cases.push_back({"argmin " + tag, make, [=](const Inputs& x) { return as_f64(ember::argmin(x[0], dim, keepdim)); }});
        }
      }
      auto make = [=] { return Inputs{any_of(s, d)}; };
      std::vector<size_t> grad_inputs = floating ? std::vector<size_t>{0} : std::vector<size_t>{};
      cases.push_back({"full max " + shape_name(s) + " " + dtype_str(d), make,
                       [](const Inputs& x) { return as_f64(ember::max(x[0])); }, grad_inputs});
      cases.push_back({"full min " + shape_name(s) + " " + dtype_str(d), make,
                       [](const Inputs& x) { return as_f64(ember::min(x[0])); }, grad_inputs});
    }
    cases.push_back({"max over dim 0 of a transposed view " + dtype_str(d), [=] { return Inputs{any_of({17, 33}, d)}; },
                     [](const Inputs& x) { return as_f64(std::get<0>(ember::max(x[0].t(), 0))); },
                     floating ? std::vector<size_t>{0} : std::vector<size_t>{}});
    cases.push_back({"argmax over dim 1 of a permuted view " + dtype_str(d), [=] { return Inputs{any_of({2, 3, 4, 5}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::argmax(x[0].permute({1, 3, 0, 2}), 1)); }});
    cases.push_back({"argmin of [64, 100000] over dim 1 " + dtype_str(d), [=] { return Inputs{any_of({64, 100000}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::argmin(x[0], 1)); }});
    cases.push_back({"full max of a transposed view " + dtype_str(d), [=] { return Inputs{any_of({17, 33}, d)}; },
                     [](const Inputs& x) { return as_f64(ember::max(x[0].t())); },
                     floating ? std::vector<size_t>{0} : std::vector<size_t>{}});
  }
  // Ties in floats: max and min pick the first, the full-reduction gradient is shared.
  for (DType d : kFloating) {
    cases.push_back({"float ties " + dtype_str(d),
                     [=] { return Inputs{ember::tensor({1.0, 3.0, 3.0, -2.0, 3.0, -2.0, 0.0}).to(d).reshape({1, 7})}; },
                     [](const Inputs& x) { return std::get<0>(ember::max(x[0], 1)); }, {0}});
    cases.push_back({"float tie indices " + dtype_str(d),
                     [=] { return Inputs{ember::tensor({1.0, 3.0, 3.0, -2.0, 3.0, -2.0, 0.0}).to(d).reshape({7, 1})}; },
                     [](const Inputs& x) { return as_f64(ember::argmin(x[0], 0)); }});
    cases.push_back({"full max with ties shares the gradient " + dtype_str(d),
                     [=] { return Inputs{ember::tensor({1.0, 3.0, 3.0, -2.0, 3.0, -2.0, 0.0}).to(d)}; },
                     [](const Inputs& x) { return ember::max(x[0]); }, {0}});
  }
  run_all(cases);
}

TEST_CASE("parity: sum_to reduces broadcast gradients back to each shape") {
  std::vector<ParityCase> cases;
  const std::vector<std::pair<Shape, Shape>> pairs{{{4, 3, 5}, {3, 1}},       {{7}, {}},     {{4097}, {1}},
                                                   {{2, 3, 4, 5}, {1, 3, 1, 5}}, {{64, 10}, {10}}, {{33, 17}, {33, 17}},
                                                   {{6, 1, 7}, {1, 7}}};
  for (DType d : kFloating) {
    for (const auto& [from, to] : pairs) {
      Shape f = from, t = to;
      cases.push_back({"sum_to " + shape_name(from) + " to " + shape_name(to) + " " + dtype_str(d),
                       [=] { return Inputs{floats(f, d)}; }, [t](const Inputs& x) { return ember::sum_to(x[0], t); }, {0},
                       d == kFloat64 ? 1e-10 : 1e-4});
    }
  }
  run_all(cases);
}

TEST_CASE("parity: a composite expression trains the same on both devices") {
  // A small least-squares step: every element-wise op, broadcasting and reductions in one graph.
  std::vector<ParityCase> cases;
  for (DType d : kFloating) {
    cases.push_back({"composite " + dtype_str(d), [=] { return Inputs{floats({64, 10}, d), floats({10}, d), floats({64, 1}, d)}; },
                     [](const Inputs& x) {
                       Tensor pred = ember::add(ember::mul(x[0], x[1]), ember::exp(ember::neg(ember::abs(x[2]))));
                       Tensor err = ember::sub(pred, ember::sqrt(ember::add(ember::pow(x[2], 2.0), 1.0)));
                       Tensor clipped = ember::where(ember::gt(err, 0.0), err, ember::mul(err, 0.1));
                       Tensor hinge = ember::maximum(clipped, ember::full({}, -0.5, {.dtype = x[0].dtype(), .device = x[0].device()}));
                       return ember::add(ember::mean(ember::pow(hinge, 2.0)), ember::div(std::get<0>(ember::max(hinge, 1)).sum(), 64.0));
                     },
                     {0, 1, 2}, d == kFloat64 ? 1e-10 : 1e-4});
  }
  run_all(cases);
}
