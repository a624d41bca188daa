#include "ember/core/dtype.h"

namespace ember {

size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
    case DType::Bool: return 1;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
         dtype == DType::BFloat16;
}

std::ostream& operator<<(std::ostream& out, DType dtype) { return out << dtype_name(dtype); }

}  // namespace ember
