// Input checks shared by the functional ops (internal to nn/): each names the op, what it expected
// and what it got, and runs before any dispatch, so both devices give the same error.
#pragma once

#include "ember/common/error.h"
#include "ember/core/tensor.h"
#include "ember/nn/options/loss.h"

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

// Every loss but kl_div: Reduction::BatchMean is kl_div's alone, as in PyTorch.
inline void check_not_batchmean(Reduction reduction, const char* op) {
  EMBER_CHECK(reduction != Reduction::BatchMean, op, ": reduction BatchMean (\"batchmean\") is only for kl_div; "
              "use Mean, Sum or None");
}

}  // namespace ember::nn::functional::detail
