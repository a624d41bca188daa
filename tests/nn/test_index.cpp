// index_select, gather, embedding (nn::Embedding) and one_hot: PyTorch's values and gradients
// (tests/gen_index_fixtures.py), float64 finite differences, repeated indices summed in the same
// bits on 1 and 2 threads, and the error messages.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/core/threading.h"
#include "ember/nn/embedding.h"
#include "ember/nn/functional.h"
#include "nn/reference.h"

namespace F = ember::nn::functional;
using ember::Shape;
using ember::Tensor;
using namespace ember::test;
using Catch::Matchers::Contains;

namespace {

using IndexedOp = std::function<Tensor(const Tensor&, const Tensor&)>;

// y = op(x, index) against index_<name>: the output, and dx after backward of sum(y * dy).
void check_fixture(const std::string& name, const IndexedOp& op) {
  auto f = fixture("index_" + name);
  Tensor x = leaf(f.at("x"));
  Tensor y = op(x, f.at("index"));
  CHECK(y.dtype() == f.at("y").dtype());
  require_close(y, f.at("y"), name + ": output", 1e-12);  // a selection: exact
  y.backward(f.at("dy"));
  require_close(x.grad(), f.at("dx"), name + ": gradient", 1e-6);
}

Tensor ints(std::vector<int64_t> values, Shape shape) {
  return ember::tensor<int64_t>(values).reshape(std::move(shape));
}

// out[e] = x[the index's coordinates of e, with index[e] in place of the coordinate along dim],
// element by element from the coordinates: the definition, against both of the kernel's loops.
Tensor gather_by_definition(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = ember::empty(index.sizes());
  const Tensor xc = x.contiguous(), ic = index.contiguous();
  const int64_t n = ic.numel(), ndim = ic.dim();
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0, rest = e, stride = 1;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      const int64_t coord = d == dim ? ic.data<int64_t>()[e] : rest % ic.size(d);
      offset += coord * stride;
      rest /= ic.size(d);
      stride *= xc.size(d);
    }
    out.data<float>()[e] = xc.data<float>()[offset];
  }
  return out;
}

}  // namespace

TEST_CASE("index_select matches PyTorch along the first, a middle and the last dim, repeats summed") {
  check_fixture("select_dim1", [](const Tensor& x, const Tensor& i) { return ember::index_select(x, 1, i); });
  check_fixture("select_rows_f64", [](const Tensor& x, const Tensor& i) { return x.index_select(0, i); });
  check_fixture("select_last", [](const Tensor& x, const Tensor& i) { return ember::index_select(x, -1, i); });
}

TEST_CASE("gather matches PyTorch: one class per row, and an index smaller than the input") {
  check_fixture("gather_classes", [](const Tensor& x, const Tensor& i) { return ember::gather(x, 1, i); });
  check_fixture("gather_dim0", [](const Tensor& x, const Tensor& i) { return x.gather(0, i); });
}

TEST_CASE("embedding matches PyTorch, the padding row without gradient") {
  check_fixture("embedding", [](const Tensor& w, const Tensor& i) { return F::embedding(i, w); });
  check_fixture("embedding_padding", [](const Tensor& w, const Tensor& i) { return F::embedding(i, w, 0); });
  check_fixture("embedding_padding", [](const Tensor& w, const Tensor& i) { return F::embedding(i, w, -20); });
}

TEST_CASE("one_hot matches PyTorch, num_classes given or inferred") {
  auto f = fixture("index_one_hot");
  require_close(ember::one_hot(f.at("classes")), f.at("y"), "one_hot inferred", 1e-12);
  require_close(ember::one_hot(f.at("classes"), 7), f.at("y7"), "one_hot of 7", 1e-12);
  CHECK(ember::one_hot(f.at("classes")).dtype() == ember::kInt64);
  CHECK(ember::one_hot(ember::empty({0}, {.dtype = ember::kInt64}), 3).sizes() == Shape{0, 3});
}

TEST_CASE("index_select, gather and embedding gradients match finite differences, non-contiguous inputs too") {
  ember::manual_seed(43);
  const Tensor repeated = ints({2, 0, 2, 1}, {4});
  check_gradient("index_select dim 0", [&](const Tensor& x) { return ember::index_select(x, 0, repeated); },
                 ember::randn({3, 5}));
  check_gradient("index_select dim 1 of a transposed view", [&](const Tensor& x) {
    return ember::index_select(x.t(), 1, repeated);
  }, ember::randn({3, 6}, {.dtype = ember::kFloat64}));
  check_gradient("index_select with a 0-D index", [&](const Tensor& x) {
    return ember::index_select(x, 1, ember::full({}, 2.0, {.dtype = ember::kInt64}));
  }, ember::randn({2, 4, 3}));
  check_gradient("gather dim 1", [&](const Tensor& x) { return ember::gather(x, 1, ints({0, 0, 3, 1, 2, 2}, {2, 3})); },
                 ember::randn({2, 5}));
  check_gradient("gather of a transposed view, dim -1", [&](const Tensor& x) {
    return ember::gather(x.t(), -1, ints({1, 0, 1, 1, 0, 0}, {3, 2}));
  }, ember::randn({2, 4}, {.dtype = ember::kFloat64}));
  // (With a padding_idx the padding row's gradient is 0 by definition, not the derivative: the
  // fixtures check that case.)
  check_gradient("embedding, repeated ids", [&](const Tensor& w) {
    return F::embedding(ints({1, 3, 3, 0, 1, 2}, {2, 3}), w);
  }, ember::randn({4, 3}));
}

TEST_CASE("index_select's gradient sums repeated indices in the same bits on 1 and 2 threads") {
  ember::manual_seed(44);
  // Many repeats of few rows, large enough for the threaded path (columns split, then rows).
  Tensor index = ember::clamp(ember::mul(ember::rand({4096}), 7.0).to(ember::kInt64), 0.0, 6.0);
  for (const Shape& shape : {Shape{7, 64}, Shape{8, 7, 16}}) {
    Tensor x = ember::randn(shape), dy;
    std::vector<Tensor> grads;
    const int threads = ember::get_num_threads();
    for (int t : {1, 2}) {
      ember::set_num_threads(t);
      Tensor xl = leaf(x);
      Tensor y = ember::index_select(xl, shape.size() == 2 ? 0 : 1, index);
      if (!dy.defined()) dy = ember::randn(y.sizes());
      y.backward(dy);
      grads.push_back(xl.grad());
    }
    ember::set_num_threads(threads);
    CHECK(ember::allclose(grads[0], grads[1], 0.0, 0.0));
  }
}

TEST_CASE("gather's row loop (1-2 dims) and coordinate loop (3-8 dims) agree with the definition, "
          "threads split mid-row") {
  ember::manual_seed(45);
  struct Case {
    Shape input, index;
  };
  // Index sizes smaller than the input outside dim, rows of odd length; the larger ones exceed the
  // kernel's threading threshold, so the two threads' ranges begin inside a row.
  const std::vector<Case> cases{{{37}, {53}},         {{303, 113}, {301, 111}}, {{5, 7}, {4, 1}},
                                {{9, 8, 7}, {6, 5, 7}}, {{43, 30, 32}, {41, 29, 31}}, {{3, 4, 5, 6}, {2, 3, 4, 5}}};
  const int threads = ember::get_num_threads();
  for (const Case& c : cases) {
    for (int64_t dim = 0; dim < static_cast<int64_t>(c.input.size()); ++dim) {
      Tensor x = ember::randn(c.input);
      Tensor index = ember::clamp(ember::mul(ember::rand(c.index), double(c.input[dim])).to(ember::kInt64), 0.0,
                                  double(c.input[dim] - 1));
      const Tensor expected = gather_by_definition(x, dim, index);
      for (int t : {1, 2}) {
        ember::set_num_threads(t);
        INFO("input " << ember::shape_str(c.input) << ", index " << ember::shape_str(c.index) << ", dim " << dim
                      << ", " << t << " threads");
        CHECK(ember::allclose(ember::gather(x, dim, index), expected, 0.0, 0.0));
      }
    }
  }
  ember::set_num_threads(threads);
}

TEST_CASE("gather beyond the kernel's 8 dims takes the offsets path and agrees with the 2-D gather") {
  Tensor x = ember::randn({2, 3}), index = ints({2, 0, 1, 1}, {2, 2});
  const Shape nine{2, 1, 1, 1, 1, 1, 1, 1, 3}, nine_index{2, 1, 1, 1, 1, 1, 1, 1, 2};
  Tensor wide = leaf(x.reshape(nine));
  Tensor y = ember::gather(wide, -1, index.reshape(nine_index));
  CHECK(ember::allclose(y.reshape({2, 2}), ember::gather(x, 1, index), 0.0, 0.0));
  y.sum().backward();
  CHECK(ember::allclose(wide.grad().reshape({2, 3}), ember::tensor<float>({1, 0, 1, 0, 2, 0}).reshape({2, 3}), 0.0, 0.0));
}

TEST_CASE("index_select moves any dtype, int64 and bool included") {
  Tensor labels = ints({10, 11, 12, 13}, {4});
  Tensor picked = ember::index_select(labels, 0, ints({3, 3, 0}, {3}));
  CHECK(picked.dtype() == ember::kInt64);
  CHECK(picked.data<int64_t>()[0] == 13);
  CHECK(picked.data<int64_t>()[2] == 10);
  Tensor mask = ember::gt(ember::tensor<float>({1.0f, -1.0f, 2.0f}), 0.0);
  Tensor m = ember::index_select(mask, 0, ints({1, 2}, {2}));
  CHECK(m.dtype() == ember::kBool);
  CHECK(m.data<uint8_t>()[0] == 0);
  CHECK(m.data<uint8_t>()[1] == 1);
}

TEST_CASE("Embedding starts N(0, 1) with a zero padding row, and loads pretrained tables") {
  ember::manual_seed(45);
  ember::nn::Embedding table(1000, 16, {.padding_idx = -1});
  CHECK(table.weight.sizes() == Shape{1000, 16});
  CHECK(table.extra_repr() == "1000, 16, padding_idx=999");
  CHECK(ember::allclose(table.weight.select(0, 999), ember::zeros({16}), 0.0, 0.0));
  CHECK(std::abs(ember::std(table.weight).item<float>() - 1.0f) < 0.02f);
  Tensor out = table(ints({999, 5, 5}, {3}));
  CHECK(out.sizes() == Shape{3, 16});
  CHECK(ember::allclose(out.select(0, 0), ember::zeros({16}), 0.0, 0.0));
  Tensor pretrained = ember::randn({5, 3});
  auto frozen = ember::nn::Embedding::from_pretrained(pretrained);
  CHECK(!frozen.weight.requires_grad());
  CHECK(frozen.extra_repr() == "5, 3");
  CHECK(ember::allclose(frozen(ints({4}, {1})).select(0, 0), pretrained.select(0, 4), 0.0, 0.0));
  auto tuned = ember::nn::Embedding::from_pretrained(pretrained, false);
  CHECK(tuned.weight.requires_grad());
  CHECK(tuned.weight.data_ptr() != pretrained.data_ptr());  // a copy
}

TEST_CASE("index_select, gather, embedding and one_hot reject bad arguments with messages naming the op") {
  Tensor x = ember::randn({3, 4});
  CHECK_THROWS_WITH(ember::index_select(x, 0, ints({0, 3}, {2})),
                    Contains("index_select: index 3 is out of range for dim 0 of size 3"));
  CHECK_THROWS_WITH(ember::index_select(x, 1, ints({-1}, {1})),
                    Contains("index_select: index -1 is out of range for dim 1 of size 4"));
  CHECK_THROWS_WITH(ember::index_select(x, 2, ints({0}, {1})), Contains("index_select: dim 2 is out of range"));
  CHECK_THROWS_WITH(ember::index_select(x, 0, ember::tensor<float>({0.0f})),
                    Contains("index_select: expected an int64 index, got float32"));
  CHECK_THROWS_WITH(ember::index_select(x, 0, ints({0, 1}, {1, 2})),
                    Contains("index_select: expected a 1-D (or 0-D) index, got 2-D index [1, 2]"));
  CHECK_THROWS_WITH(ember::gather(x, 1, ints({0, 1}, {2})),
                    Contains("gather: expected an index with 2 dims like the input [3, 4], got index [2]"));
  CHECK_THROWS_WITH(ember::gather(x, 1, ember::zeros({4, 1}, {.dtype = ember::kInt64})),
                    Contains("gather: expected index [4, 1] no larger than input [3, 4] outside dim 1, got 4 > 3 in dim 0"));
  CHECK_THROWS_WITH(ember::gather(x, 0, ints({5}, {1, 1})), Contains("gather: index 5 is out of range for dim 0 of size 3"));
  ember::nn::Embedding table(10, 3);
  CHECK_THROWS_WITH(table(ints({2, 10}, {2})), Contains("embedding: index 10 is out of range for dim 0 of size 10"));
  CHECK_THROWS_WITH(table(ember::tensor<float>({1.0f})), Contains("embedding: expected int64 indices, got float32 input"));
  CHECK_THROWS_WITH(F::embedding(ints({0}, {1}), ember::randn({10})),
                    Contains("embedding: expected a 2-D weight [num_embeddings, embedding_dim], got 1-D weight [10]"));
  CHECK_THROWS_WITH(ember::nn::Embedding(10, 3, {.padding_idx = 10}),
                    Contains("Embedding: padding_idx must be within [-10, 10), got 10"));
  CHECK_THROWS_WITH(ember::nn::Embedding(0, 3), Contains("Embedding: num_embeddings and embedding_dim must be positive, got 0 and 3"));
  CHECK_THROWS_WITH(ember::one_hot(ints({0, -2}, {2})), Contains("one_hot: class values must be non-negative, got -2"));
  CHECK_THROWS_WITH(ember::one_hot(ints({0, 5}, {2}), 3),
                    Contains("one_hot: class values must be smaller than num_classes 3, got 5"));
  CHECK_THROWS_WITH(ember::one_hot(ember::tensor<float>({1.0f})),
                    Contains("one_hot: expected an int64 tensor of class values, got float32"));
  CHECK_THROWS_WITH(ember::one_hot(ember::empty({0}, {.dtype = ember::kInt64})),
                    Contains("one_hot: cannot infer num_classes from an empty tensor of shape [0]"));
}
