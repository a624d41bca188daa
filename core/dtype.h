// Element types of a tensor.
// defines: ember::DType, ember::element_size, ember::dtype_name, ember::dtype_of<T>, ember::visit_dtype
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "ember/common/error.h"

namespace ember {

// Bool is stored as one byte (0 or 1), what comparisons return. Float16 and BFloat16 are reserved:
// a tensor may be declared with them, but no op computes in them yet.
enum class DType : uint8_t { Float32, Float64, Int64, UInt8, Bool, Float16, BFloat16 };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kBool = DType::Bool;

size_t element_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "float32", as PyTorch prints it
bool is_floating(DType dtype);
std::ostream& operator<<(std::ostream& out, DType dtype);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else static_assert(sizeof(T) == 0, "no ember dtype for this C++ type");
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with the C++ type that computes `dtype` (Bool computes as uint8_t).
// `op` names the caller in the error for a dtype without kernels.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(TypeTag<float>{});
    case DType::Float64: return fn(TypeTag<double>{});
    case DType::Int64: return fn(TypeTag<int64_t>{});
    case DType::UInt8:
    case DType::Bool: return fn(TypeTag<uint8_t>{});
    default:
      throw NotImplemented(detail::str(op, ": dtype ", dtype_name(dtype), " is not supported yet"));
  }
}

// Same, for ops defined only on floating types.
template <class Fn>
decltype(auto) visit_floating(DType dtype, std::string_view op, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(TypeTag<float>{});
    case DType::Float64: return fn(TypeTag<double>{});
    default:
      throw Error(detail::str(op, ": expected a floating-point tensor (float32 or float64), got ",
                              dtype_name(dtype)));
  }
}

}  // namespace ember
