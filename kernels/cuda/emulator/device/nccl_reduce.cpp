// ember's emulated NCCL: the element-wise arithmetic of a reduction (nccl_reduce.h).
#include "ember/kernels/cuda/emulator/device/nccl_reduce.h"

#include <type_traits>

namespace ember::emu::nccl {

namespace {

// Integer sums and products in the unsigned type of the same width: they wrap around as a GPU's
// do, instead of being undefined behaviour on a signed overflow.
template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename T>
T multiply(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // unsigned short/char promote to int, whose product can overflow: multiply as uint64_t.
    return static_cast<T>(static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(a)) *
                          static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(b)));
  } else {
    return a * b;
  }
}

template <typename T>
void combine_typed(T* acc, const T* in, size_t count, Reduction reduction) {
  switch (reduction) {
    case Reduction::sum:
    case Reduction::avg:
      for (size_t i = 0; i < count; ++i) acc[i] = add(acc[i], in[i]);
      return;
    case Reduction::prod:
      for (size_t i = 0; i < count; ++i) acc[i] = multiply(acc[i], in[i]);
      return;
    case Reduction::max:
      for (size_t i = 0; i < count; ++i) acc[i] = in[i] > acc[i] ? in[i] : acc[i];
      return;
    case Reduction::min:
      for (size_t i = 0; i < count; ++i) acc[i] = in[i] < acc[i] ? in[i] : acc[i];
      return;
  }
}

template <typename T>
void divide_typed(T* acc, size_t count, int nranks) {
  for (size_t i = 0; i < count; ++i) acc[i] = static_cast<T>(acc[i] / static_cast<T>(nranks));
}

// Calls f(T*) with `p` as a pointer to the C++ type of `scalar`.
template <typename F>
void with_type(Scalar scalar, void* p, F&& f) {
  switch (scalar) {
    case Scalar::int8: return f(static_cast<int8_t*>(p));
    case Scalar::uint8: return f(static_cast<uint8_t*>(p));
    case Scalar::int32: return f(static_cast<int32_t*>(p));
    case Scalar::uint32: return f(static_cast<uint32_t*>(p));
    case Scalar::int64: return f(static_cast<int64_t*>(p));
    case Scalar::uint64: return f(static_cast<uint64_t*>(p));
    case Scalar::float32: return f(static_cast<float*>(p));
    case Scalar::float64: return f(static_cast<double*>(p));
  }
}

}  // namespace

size_t scalar_bytes(Scalar scalar) {
  switch (scalar) {
    case Scalar::int8:
    case Scalar::uint8: return 1;
    case Scalar::int32:
    case Scalar::uint32:
    case Scalar::float32: return 4;
    case Scalar::int64:
    case Scalar::uint64:
    case Scalar::float64: return 8;
  }
  return 0;
}

const char* scalar_name(Scalar scalar) {
  switch (scalar) {
    case Scalar::int8: return "int8";
    case Scalar::uint8: return "uint8";
    case Scalar::int32: return "int32";
    case Scalar::uint32: return "uint32";
    case Scalar::int64: return "int64";
    case Scalar::uint64: return "uint64";
    case Scalar::float32: return "float32";
    case Scalar::float64: return "float64";
  }
  return "?";
}

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::sum: return "sum";
    case Reduction::prod: return "prod";
    case Reduction::max: return "max";
    case Reduction::min: return "min";
    case Reduction::avg: return "avg";
  }
  return "?";
}

void combine(void* acc, const void* in, size_t count, Scalar scalar, Reduction reduction) {
  with_type(scalar, acc, [&](auto* typed_acc) {
    using T = std::remove_pointer_t<decltype(typed_acc)>;
    combine_typed(typed_acc, static_cast<const T*>(in), count, reduction);
  });
}

void finish_average(void* acc, size_t count, Scalar scalar, int nranks) {
  with_type(scalar, acc, [&](auto* typed_acc) { divide_typed(typed_acc, count, nranks); });
}

}  // namespace ember::emu::nccl
