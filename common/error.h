// The one error type every layer shares, and the check macro that builds its messages.
// defines: ember::Error, ember::OutOfMemory, ember::NotImplemented, EMBER_CHECK, ember::detail::str
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {

// Every user-facing failure. The message names the op, what it expected and what it got:
//   "add: shapes [64, 10] and [32] cannot be broadcast".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation failed even after the caching allocator released its cache.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// A valid request that ember does not support yet (conv2d with groups != 1, an op on a dtype).
class NotImplemented : public Error {
 public:
  using Error::Error;
};

namespace detail {

inline void append(std::ostringstream& out, const std::vector<int64_t>& shape) {
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
}
template <class T>
void append(std::ostringstream& out, const T& value) {
  out << value;
}

// Concatenates its arguments into one string; a std::vector<int64_t> prints as a shape, [2, 3].
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream out;
  (append(out, args), ...);
  return out.str();
}

}  // namespace detail
}  // namespace ember

// Throws ember::Error with the concatenated message when `cond` is false.
#define EMBER_CHECK(cond, ...)                                \
  do {                                                        \
    if (!(cond)) throw ::ember::Error(::ember::detail::str(__VA_ARGS__)); \
  } while (0)
