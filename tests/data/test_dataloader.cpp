// The DataLoader: batch counts and sizes, per-epoch shuffles, prefetch workers, early exits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <optional>
#include <thread>

#include "ember/core/ops.h"
#include "ember/data/dataloader.h"

using ember::Tensor;
namespace data = ember::data;

namespace {

// Input row i is [i, 10 i] (float32), target i is i (int64).
std::shared_ptr<data::TensorDataset> numbers(int64_t n) {
  Tensor inputs = ember::empty({n, 2});
  for (int64_t i = 0; i < n; ++i) {
    inputs.data<float>()[2 * i] = static_cast<float>(i);
    inputs.data<float>()[2 * i + 1] = static_cast<float>(10 * i);
  }
  return std::make_shared<data::TensorDataset>(inputs, ember::arange(static_cast<double>(n)));
}

std::vector<int64_t> targets_of(const Tensor& target) {
  std::vector<int64_t> out(static_cast<size_t>(target.numel()));
  std::copy_n(target.data<int64_t>(), out.size(), out.begin());
  return out;
}

// One epoch as the list of each batch's targets.
std::vector<std::vector<int64_t>> epoch(data::DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (auto [inputs, target] : loader) {
    REQUIRE(inputs.size(0) == target.size(0));
    for (int64_t i = 0; i < target.size(0); ++i) {
      REQUIRE(inputs.at<float>({i, 0}) == static_cast<float>(target.at<int64_t>({i})));  // rows stay paired
      REQUIRE(inputs.at<float>({i, 1}) == static_cast<float>(10 * target.at<int64_t>({i})));
    }
    batches.push_back(targets_of(target));
  }
  return batches;
}

std::vector<int64_t> flat(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<size_t> sizes(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<size_t> out;
  for (const auto& b : batches) out.push_back(b.size());
  return out;
}

// Counts get_batch calls, optionally sleeps in each, and throws for one chosen index.
class Probe : public data::Dataset {
 public:
  Probe(int64_t n, std::chrono::milliseconds delay, int64_t poison = -1) : n_(n), delay_(delay), poison_(poison) {}
  int64_t size() const override { return n_; }
  data::Example get(int64_t index) const override {
    return {ember::full({1}, static_cast<double>(index)), ember::full({}, static_cast<double>(index), {.dtype = ember::kInt64})};
  }
  data::Example get_batch(const std::vector<int64_t>& indices) const override {
    ++calls;
    std::this_thread::sleep_for(delay_);
    for (int64_t i : indices) {
      if (i == poison_) throw ember::Error("probe: example " + std::to_string(i) + " is poisoned");
    }
    return Dataset::get_batch(indices);
  }
  mutable std::atomic<int> calls{0};

 private:
  int64_t n_;
  std::chrono::milliseconds delay_;
  int64_t poison_;
};

}  // namespace

TEST_CASE("DataLoader makes ceil(N / batch) batches, or floor with drop_last") {
  auto dataset = numbers(10);
  for (int workers : {0, 2}) {
    data::DataLoader plain(dataset, {.batch_size = 3, .num_workers = workers});
    CHECK(plain.size() == 4);
    auto batches = epoch(plain);
    CHECK(sizes(batches) == std::vector<size_t>{3, 3, 3, 1});
    CHECK(flat(batches) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // in order without shuffle

    data::DataLoader dropping(dataset, {.batch_size = 3, .drop_last = true, .num_workers = workers});
    CHECK(dropping.size() == 3);
    CHECK(sizes(epoch(dropping)) == std::vector<size_t>{3, 3, 3});
  }
  CHECK(data::DataLoader(dataset, {.batch_size = 5, .drop_last = true}).size() == 2);
  CHECK(data::DataLoader(dataset, {.batch_size = 64}).size() == 1);
  CHECK(data::DataLoader(dataset, {.batch_size = 64, .drop_last = true}).size() == 0);
  data::DataLoader none(dataset, {.batch_size = 64, .drop_last = true, .num_workers = 2});
  CHECK(epoch(none).empty());
}

TEST_CASE("DataLoader batches hold the inputs and targets of the same examples") {
  data::DataLoader loader(numbers(7), {.batch_size = 4, .shuffle = true, .seed = 3});
  for (auto [inputs, target] : loader) {
    CHECK(inputs.sizes() == ember::Shape{target.size(0), 2});
    CHECK(target.dtype() == ember::kInt64);
  }
  CHECK(epoch(loader).size() == 2);  // epoch() checks the pairing row by row
}

TEST_CASE("DataLoader shuffles every index exactly once per epoch, freshly each epoch") {
  const int64_t n = 100;
  data::DataLoader loader(numbers(n), {.batch_size = 8, .shuffle = true, .seed = 5});
  std::vector<int64_t> identity(n);
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<std::vector<int64_t>> orders;
  for (int e = 0; e < 4; ++e) {
    CHECK(loader.epoch() == static_cast<uint64_t>(e));
    std::vector<int64_t> order = flat(epoch(loader));
    CHECK(order != identity);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == identity);
    for (const auto& earlier : orders) CHECK(order != earlier);
    orders.push_back(order);
  }
  CHECK(loader.epoch() == 4);

  SECTION("the same seed gives the same sequence of epochs in a new loader (run to run)") {
    data::DataLoader again(numbers(n), {.batch_size = 8, .shuffle = true, .seed = 5});
    for (const auto& order : orders) CHECK(flat(epoch(again)) == order);
  }
  SECTION("set_epoch replays an epoch") {
    loader.set_epoch(2);
    CHECK(flat(epoch(loader)) == orders[2]);
    CHECK(flat(epoch(loader)) == orders[3]);
  }
  SECTION("another seed gives other orders") {
    data::DataLoader other(numbers(n), {.batch_size = 8, .shuffle = true, .seed = 6});
    CHECK(flat(epoch(other)) != orders[0]);
  }
  SECTION("drop_last drops the tail of the permutation, not fixed indices") {
    data::DataLoader dropping(numbers(n), {.batch_size = 8, .shuffle = true, .drop_last = true, .seed = 5});
    std::vector<int64_t> order = flat(epoch(dropping));
    CHECK(order == std::vector<int64_t>(orders[0].begin(), orders[0].begin() + 96));
  }
}

TEST_CASE("DataLoader workers deliver the same batches in the same order as no workers") {
  auto dataset = numbers(101);
  for (bool drop_last : {false, true}) {
    data::DataLoader serial(dataset, {.batch_size = 4, .shuffle = true, .drop_last = drop_last, .seed = 11});
    auto expected0 = epoch(serial), expected1 = epoch(serial);
    for (int workers : {1, 2, 3, 8}) {
      data::DataLoader parallel(dataset,
                                {.batch_size = 4, .shuffle = true, .drop_last = drop_last, .num_workers = workers, .seed = 11});
      CHECK(epoch(parallel) == expected0);
      CHECK(epoch(parallel) == expected1);
    }
  }
}

TEST_CASE("DataLoader workers keep order when batches finish out of order") {
  // Slow batches with many workers: later batches often finish first.
  auto probe = std::make_shared<Probe>(40, std::chrono::milliseconds(2));
  data::DataLoader loader(probe, {.batch_size = 1, .num_workers = 4});
  std::vector<int64_t> seen;
  for (auto [inputs, target] : loader) seen.push_back(target.at<int64_t>({0}));
  std::vector<int64_t> expected(40);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(seen == expected);
}

TEST_CASE("DataLoader workers prefetch at most 2 x num_workers batches ahead") {
  auto probe = std::make_shared<Probe>(100, std::chrono::milliseconds(0));
  data::DataLoader loader(probe, {.batch_size = 1, .num_workers = 2});
  auto it = loader.begin();
  CHECK((*it).target.at<int64_t>({0}) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Batch 0 is taken; the workers may make batches 1..4 and must then wait.
  CHECK(probe->calls.load() <= 1 + 4);
  CHECK(probe->calls.load() >= 2);
}

TEST_CASE("breaking out of a DataLoader loop joins its workers without hanging") {
  auto probe = std::make_shared<Probe>(1000, std::chrono::milliseconds(1));
  data::DataLoader loader(probe, {.batch_size = 1, .num_workers = 3});
  int taken = 0;
  auto start = std::chrono::steady_clock::now();
  for (auto [inputs, target] : loader) {
    (void)inputs;
    if (++taken == 5) break;
  }
  // The loop's iterators are gone, so the workers are stopped and joined: no more batches are made.
  int calls = probe->calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(probe->calls.load() == calls);
  CHECK(calls <= 5 + 2 * 3 + 3);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("a DataLoader epoch after an abandoned one is complete") {
  auto probe = std::make_shared<Probe>(30, std::chrono::milliseconds(0));
  data::DataLoader loader(probe, {.batch_size = 4, .num_workers = 2});
  for (auto [inputs, target] : loader) {
    (void)inputs, (void)target;
    break;
  }
  size_t batches = 0;
  int64_t examples = 0;
  for (auto [inputs, target] : loader) ++batches, examples += target.size(0);
  CHECK(batches == 8);
  CHECK(examples == 30);
}

TEST_CASE("an iterator outliving its DataLoader finishes the epoch, and destruction joins") {
  auto probe = std::make_shared<Probe>(20, std::chrono::milliseconds(1));
  std::optional<data::DataLoader::Iterator> it, end;
  {
    data::DataLoader loader(probe, {.batch_size = 2, .num_workers = 2});
    it = loader.begin();
    end = loader.end();
  }
  int batches = 0;
  for (; *it != *end; ++*it) batches += (**it).target.size(0) == 2;
  CHECK(batches == 10);
  it.reset();
  int calls = probe->calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(probe->calls.load() == calls);
}

TEST_CASE("DataLoader rethrows a worker's exception when the loop reaches that batch") {
  for (int workers : {0, 1, 3}) {
    auto probe = std::make_shared<Probe>(20, std::chrono::milliseconds(0), /*poison=*/9);
    data::DataLoader loader(probe, {.batch_size = 2, .num_workers = workers});
    std::vector<int64_t> seen;
    auto run = [&] {
      for (auto [inputs, target] : loader) seen.push_back(target.at<int64_t>({0}));
    };
    REQUIRE_THROWS_WITH(run(), Catch::Contains("probe: example 9 is poisoned"));
    CHECK(seen == std::vector<int64_t>{0, 2, 4, 6});  // batch 4 ([8, 9]) threw; all before it arrived
  }
}

TEST_CASE("DataLoader iterators fetch a batch once and may skip ahead") {
  data::DataLoader loader(numbers(20), {.batch_size = 2, .num_workers = 2});
  auto it = loader.begin();
  CHECK((*it).target.at<int64_t>({0}) == 0);
  CHECK(it->target.at<int64_t>({1}) == 1);  // dereferencing again returns the same batch
  ++it, ++it, ++it;                          // skip batches 1 and 2 unseen
  CHECK(it->target.at<int64_t>({0}) == 6);
  for (int k = 4; k < 10; ++k) CHECK((*++it).target.at<int64_t>({0}) == 2 * k);
  CHECK(++it == loader.end());
}

TEST_CASE("DataLoader rejects bad options") {
  auto dataset = numbers(4);
  REQUIRE_THROWS_WITH(data::DataLoader(nullptr), Catch::Contains("dataset is null"));
  REQUIRE_THROWS_WITH(data::DataLoader(dataset, {.batch_size = 0}), Catch::Contains("batch_size must be positive, got 0"));
  REQUIRE_THROWS_WITH(data::DataLoader(dataset, {.num_workers = -1}), Catch::Contains("num_workers must be >= 0, got -1"));
}

TEST_CASE("DataLoader pin_memory is accepted without a GPU and changes nothing there") {
  auto dataset = numbers(10);
  data::DataLoader pinned(dataset, {.batch_size = 3, .num_workers = 1, .pin_memory = true});
  data::DataLoader plain(dataset, {.batch_size = 3});
  CHECK(epoch(pinned) == epoch(plain));
}
