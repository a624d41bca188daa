// A size per spatial dimension, written as one number for all of them or one per dimension: the
// type of kernel_size, stride, padding and dilation (libtorch's torch::ExpandingArray).
// defines: ember::nn::ExpandingArray, OptionalExpandingArray
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>

#include "ember/common/error.h"

namespace ember::nn {

// ExpandingArray<2> k = 3 holds {3, 3}; ExpandingArray<2> k = {3, 1} holds {3, 1} (height, then
// width, as PyTorch's (3, 1)). A braced list of any other length than D throws ember::Error.
template <size_t D, class T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T value) { values_.fill(value); }  // NOLINT: implicit, as libtorch's
  ExpandingArray(std::initializer_list<T> values) {
    EMBER_CHECK(values.size() == D, "expected ", D, " values (one per spatial dimension), got ", values.size());
    std::copy(values.begin(), values.end(), values_.begin());
  }
  ExpandingArray(const std::array<T, D>& values) : values_(values) {}  // NOLINT: implicit

  T operator[](size_t i) const { return values_[i]; }
  T& operator[](size_t i) { return values_[i]; }
  const T* begin() const { return values_.data(); }
  const T* end() const { return values_.data() + D; }
  static constexpr size_t size() { return D; }
  bool all(T value) const {
    return std::all_of(begin(), end(), [value](T v) { return v == value; });
  }
  bool operator==(const ExpandingArray&) const = default;

 private:
  std::array<T, D> values_{};
};

// An ExpandingArray or nothing (PyTorch's None), written as one: `= 2`, `= {2, 1}`, or left out.
// (std::optional<ExpandingArray<D>> cannot be initialised from a braced pair.)
template <size_t D, class T = int64_t>
class OptionalExpandingArray {
 public:
  OptionalExpandingArray() = default;
  OptionalExpandingArray(T value) : value_(ExpandingArray<D, T>(value)) {}  // NOLINT: implicit
  OptionalExpandingArray(std::initializer_list<T> values) : value_(ExpandingArray<D, T>(values)) {}
  OptionalExpandingArray(const ExpandingArray<D, T>& value) : value_(value) {}  // NOLINT: implicit

  bool has_value() const { return value_.has_value(); }
  ExpandingArray<D, T> value_or(const ExpandingArray<D, T>& otherwise) const { return value_.value_or(otherwise); }

 private:
  std::optional<ExpandingArray<D, T>> value_;
};

// As a Python tuple: "(3, 1)" (PyTorch's repr of kernel_size=(3, 1)).
template <size_t D, class T>
std::ostream& operator<<(std::ostream& out, const ExpandingArray<D, T>& a) {
  out << "(";
  for (size_t i = 0; i < D; ++i) out << (i ? ", " : "") << a[i];
  return out << ")";
}

// For error messages: "3" when every dimension holds 3, else the tuple "(3, 1)".
template <size_t D, class T>
std::string compact_str(const ExpandingArray<D, T>& a) {
  std::ostringstream out;
  if (a.all(a[0])) out << a[0];
  else out << a;
  return out.str();
}

}  // namespace ember::nn
