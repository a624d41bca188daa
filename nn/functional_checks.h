// Input checks and CPU scratch memory shared by the functional ops (internal to nn/).
#pragma once

#include <vector>

#include "ember/common/error.h"
#include "ember/core/tensor.h"

namespace ember::nn::functional::detail {

inline void check_defined(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

inline void check_floating(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.dtype() == kFloat32 || t.dtype() == kFloat64, op, ": ", what,
              " must be float32 or float64, got ", dtype_name(t.dtype()));
}

inline void check_same(const Tensor& a, const Tensor& b, const char* op, const char* what_a,
                       const char* what_b) {
  EMBER_CHECK(a.device() == b.device(), op, ": ", what_a, " is on ", a.device(), " but ", what_b,
              " is on ", b.device());
  EMBER_CHECK(a.dtype() == b.dtype(), op, ": ", what_a, " is ", dtype_name(a.dtype()), " but ",
              what_b, " is ", dtype_name(b.dtype()));
}

[[noreturn]] inline void cuda_not_ready(const char* op) {
  throw NotImplemented(ember::detail::str(op, ": the CUDA kernel is not implemented yet; run on "
                                          "the CPU (Device::cpu())"));
}

// The CUDA branch of an op in a build without CUDA (EMBER_CUDA=OFF).
[[noreturn]] inline void cuda_not_built(const char* op) {
  throw Error(ember::detail::str(op, ": this build of ember has no CUDA support; run on the CPU "
                                 "(Device::cpu())"));
}

// Scratch memory for kernels, kept per thread and type and grown only when a call needs more,
// so a training loop of fixed shapes stops allocating after its first step.
template <class T>
T* workspace(int64_t elements) {
  thread_local std::vector<T> buffer;
  if (static_cast<int64_t>(buffer.size()) < elements) buffer.resize(static_cast<size_t>(elements));
  return buffer.data();
}

}  // namespace ember::nn::functional::detail
