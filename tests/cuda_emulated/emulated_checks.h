// Shared by tests/cuda_emulated: buffers that stand for device memory, random inputs, outputs
// poisoned with NaN, and the comparison of a CUDA kernel's result with its CPU twin's.
//
// On the emulator, device memory is host memory: a kernel gets plain std::vector storage, which
// AddressSanitizer watches in the sanitizer build, so an out-of-bounds access stops the test.
// The schedule (forward, reverse, random, run-ahead) comes from EMBER_EMU_SCHEDULE: ctest runs
// every test under each (tests/cuda_emulated/CMakeLists.txt).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "ember/kernels/cuda/copy.h"

namespace ember::test {

// The emulated kernels run inside their launch; a stream is only a handle to them.
inline cudaStream_t default_stream() { return nullptr; }

// Uniform in [lo, hi), never all zeros; integers in [lo, hi).
template <class T>
std::vector<T> random_vector(size_t n, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& x : v) x = static_cast<T>(dist(rng));
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi) - 1);
    for (auto& x : v) x = static_cast<T>(dist(rng));
  }
  return v;
}

// An output buffer whose every element is NaN (floating) or a sentinel (integers), so that an
// element the kernel forgets to write fails the comparison.
template <class T>
std::vector<T> poisoned(size_t n) {
  if constexpr (std::is_floating_point_v<T>) return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
  else return std::vector<T>(n, static_cast<T>(0x5a));
}

// float32 within 1e-5 relative (to max(1, |want|)), float64 within 1e-12, integers exactly.
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, float>) return 1e-5;
  else if constexpr (std::is_same_v<T, double>) return 1e-12;
  else return 0.0;
}

// True when got matches want element by element (NaN matches NaN only when `nan_equal`);
// otherwise reports the first differing element, with `what`, and returns false.
template <class T>
bool matches(const std::vector<T>& got, const std::vector<T>& want, const std::string& what,
             double tol = tolerance<T>(), bool nan_equal = false) {
  if (got.size() != want.size()) {
    FAIL_CHECK(what << ": " << got.size() << " elements, expected " << want.size());
    return false;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    bool ok;
    if (std::isnan(g) || std::isnan(w)) ok = nan_equal && std::isnan(g) && std::isnan(w);
    else ok = g == w || std::abs(g - w) <= tol * std::max(1.0, std::abs(w));  // g == w: equal infinities
    if (!ok) {
      FAIL_CHECK(what << ": element " << i << " of " << got.size() << " is " << g << ", expected " << w
                      << " (tolerance " << tol << ")");
      return false;
    }
  }
  return true;
}

}  // namespace ember::test

// --- Strided layouts for reference loops (test_elementwise, test_copy, test_reduce) ------------
namespace ember::test {

using kernels::contiguous_strides;
using kernels::numel_of;

// Elements a buffer needs to hold every offset of (sizes, strides); at least 1.
inline size_t storage_extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return 1;
    last += (sizes[d] - 1) * strides[d];
  }
  return static_cast<size_t>(last + 1);
}

inline int64_t offset_of(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
  return offset;
}

// Calls fn(index) for every multi-index of `sizes` in row-major order (once for 0 dims, never
// when a size is 0): the obviously-correct loop the references are written with.
template <class Fn>
void for_each_index(const std::vector<int64_t>& sizes, Fn&& fn) {
  const int64_t n = numel_of(sizes);
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(static_cast<const std::vector<int64_t>&>(index));
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace ember::test

// --- Dtype codes and names (test_elementwise, test_copy, test_reduce) --------------------------
namespace ember::test {

// A dtype code of kernels/cuda/copy.h and the C++ type its elements are stored as (bool as
// uint8_t, as in core).
template <class T, int Code>
struct Dt {
  using type = T;
  static constexpr int code = Code;
};
using F32 = Dt<float, kernels::kDTypeFloat32>;
using F64 = Dt<double, kernels::kDTypeFloat64>;
using I64 = Dt<int64_t, kernels::kDTypeInt64>;
using U8 = Dt<uint8_t, kernels::kDTypeUInt8>;
using Bool = Dt<uint8_t, kernels::kDTypeBool>;

inline const char* dtype_name(int code) {
  static const char* names[] = {"float32", "float64", "int64", "uint8", "bool"};
  return code >= 0 && code < 5 ? names[code] : "unknown";
}

inline std::string shape_text(const std::vector<int64_t>& s) {
  std::ostringstream out;
  out << "[";
  for (size_t d = 0; d < s.size(); ++d) out << (d ? ", " : "") << s[d];
  out << "]";
  return out.str();
}

}  // namespace ember::test
