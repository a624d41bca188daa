// linear's bias helpers: broadcast_rows copies the bias into every row, column_sums sums each
// column in order (exactly the sequential sum), including empty shapes.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "ember/kernels/cpu/linear.h"

namespace cpu = ember::kernels::cpu;

TEMPLATE_TEST_CASE("broadcast_rows copies the row into every row", "[linear]", float, double) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 4}, {3, 0}, {1, 1}, {64, 10}, {5, 1031}}) {
    CAPTURE(rows, cols);
    std::vector<TestType> row(cols), out(rows * cols, TestType(NAN));
    for (auto& v : row) v = TestType(dist(rng));
    cpu::broadcast_rows<TestType>(row.data(), rows, cols, out.data());
    for (int64_t i = 0; i < rows * cols; ++i) {
      if (out[i] != row[i % cols]) {
        CAPTURE(i, out[i], row[i % cols]);
        FAIL("broadcast_rows differs");
      }
    }
  }
}

TEMPLATE_TEST_CASE("column_sums sums each column over the rows in order, zeros for no rows", "[linear]", float,
                   double) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 5}, {4, 0}, {1, 1}, {64, 10}, {300, 3}, {7, 1031}}) {
    CAPTURE(rows, cols);
    std::vector<TestType> x(rows * cols), out(cols, TestType(NAN));
    for (auto& v : x) v = TestType(dist(rng));
    cpu::column_sums<TestType>(x.data(), rows, cols, out.data());
    for (int64_t j = 0; j < cols; ++j) {
      TestType want = 0;
      for (int64_t i = 0; i < rows; ++i) want += x[i * cols + j];
      if (out[j] != want) {
        CAPTURE(j, out[j], want);
        FAIL("column_sums differs from the sequential sum");
      }
    }
  }
}
