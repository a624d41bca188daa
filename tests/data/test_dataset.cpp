// Dataset's default batching, TensorDataset and gather_rows.
#include <catch2/catch.hpp>

#include "ember/core/ops.h"
#include "ember/data/dataset.h"

using ember::Tensor;
namespace data = ember::data;

namespace {

// Only get(): batches come from the default get_batch, which stacks.
class Squares : public data::Dataset {
 public:
  explicit Squares(int64_t n, bool ragged = false) : n_(n), ragged_(ragged) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t index) const override {
    int64_t width = ragged_ && index == 2 ? 3 : 2;
    Tensor input = ember::full({width}, static_cast<double>(index * index));
    return {input, ember::full({}, static_cast<double>(index), {.dtype = ember::kInt64})};
  }

 private:
  int64_t n_;
  bool ragged_;
};

}  // namespace

TEST_CASE("Dataset's default get_batch stacks get() along a new dim 0") {
  Squares squares(5);
  data::Example batch = squares.get_batch({4, 1, 3});
  REQUIRE(batch.input.sizes() == ember::Shape{3, 2});
  REQUIRE(batch.target.sizes() == ember::Shape{3});
  CHECK(batch.target.dtype() == ember::kInt64);
  CHECK(batch.input.at<float>({0, 1}) == 16.0f);
  CHECK(batch.input.at<float>({1, 0}) == 1.0f);
  CHECK(batch.input.at<float>({2, 0}) == 9.0f);
  CHECK(batch.target.at<int64_t>({0}) == 4);
  CHECK(batch.target.at<int64_t>({2}) == 3);
}

TEST_CASE("Dataset's default get_batch rejects examples of different shapes and empty batches") {
  Squares ragged(5, true);
  REQUIRE_THROWS_WITH(ragged.get_batch({0, 2}),
                      Catch::Contains("cannot stack example 2 of shape [3] onto example 0 of shape [2]"));
  REQUIRE_THROWS_WITH(ragged.get_batch({}), Catch::Contains("at least one index"));
}

TEST_CASE("TensorDataset indexes dim 0 of inputs and targets") {
  Tensor inputs = ember::arange(0.0, 12.0, 1.0, {.dtype = ember::kFloat32}).reshape({6, 2});
  Tensor targets = ember::arange(6);
  data::TensorDataset dataset(inputs, targets);
  CHECK(dataset.size() == 6);
  data::Example one = dataset.get(4);
  CHECK(one.input.sizes() == ember::Shape{2});
  CHECK(one.input.at<float>({1}) == 9.0f);
  CHECK(one.target.item<int64_t>() == 4);
  data::Example batch = dataset.get_batch({5, 0});
  CHECK(batch.input.sizes() == ember::Shape{2, 2});
  CHECK(batch.input.at<float>({0, 0}) == 10.0f);
  CHECK(batch.input.at<float>({1, 1}) == 1.0f);
  CHECK(batch.target.at<int64_t>({0}) == 5);
  REQUIRE_THROWS_WITH(dataset.get(6), Catch::Contains("index 6 is out of range for 6 examples"));
  REQUIRE_THROWS_WITH(dataset.get_batch({1, -1}), Catch::Contains("index -1 is out of range for 6 examples"));
}

TEST_CASE("TensorDataset gathers from non-contiguous inputs") {
  Tensor inputs = ember::arange(0.0, 12.0, 1.0, {.dtype = ember::kFloat32}).reshape({2, 6}).t();  // [6, 2]
  data::TensorDataset dataset(inputs, ember::arange(6));
  data::Example batch = dataset.get_batch({3});
  CHECK(batch.input.at<float>({0, 0}) == 3.0f);
  CHECK(batch.input.at<float>({0, 1}) == 9.0f);
}

TEST_CASE("TensorDataset rejects inputs and targets of different lengths") {
  REQUIRE_THROWS_WITH(data::TensorDataset(ember::zeros({5, 3}), ember::arange(4)),
                      Catch::Contains("inputs [5, 3] and targets [4] must have the same size along dim 0"));
  REQUIRE_THROWS_WITH(data::TensorDataset(ember::zeros({}), ember::arange(1)),
                      Catch::Contains("must have the same size along dim 0"));
}

TEST_CASE("Subset maps its indices onto the base dataset, in get and get_batch") {
  auto base = std::make_shared<ember::data::TensorDataset>(ember::arange(10).reshape({10, 1}), ember::arange(10));
  ember::data::Subset subset(base, {7, 2, 2});
  REQUIRE(subset.size() == 3);
  CHECK(subset.get(0).target.item<int64_t>() == 7);
  ember::data::Example batch = subset.get_batch({2, 0});
  CHECK(batch.target.at<int64_t>({0}) == 2);
  CHECK(batch.target.at<int64_t>({1}) == 7);
  CHECK(batch.input.sizes() == ember::Shape{2, 1});
  auto first = ember::data::Subset::first(base, 4);
  CHECK(first->size() == 4);
  CHECK(first->get(3).target.item<int64_t>() == 3);
  CHECK(ember::data::Subset::first(base, 100)->size() == 10);
}

TEST_CASE("Subset rejects indices out of range, at construction and at get") {
  auto base = std::make_shared<ember::data::TensorDataset>(ember::zeros({3, 2}), ember::zeros({3}));
  REQUIRE_THROWS_WITH(ember::data::Subset(base, {0, 3}), Catch::Contains("Subset: index 3 is out of range for a dataset of 3"));
  ember::data::Subset subset(base, {1});
  REQUIRE_THROWS_WITH(subset.get(1), Catch::Contains("Subset: index 1 is out of range for 1 examples"));
  REQUIRE_THROWS_WITH(ember::data::Subset::first(base, -1), Catch::Contains("count must be >= 0, got -1"));
}
