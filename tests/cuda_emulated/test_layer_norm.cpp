// layer_norm on the emulator against its CPU twin (kernels/cpu/layer_norm.h): the forward (y and
// the per-row mean and invstd) and the backward (dx, dweight, dbias, each optional), with and
// without weight and bias, over rows shorter than a warp, rows spanning several warp strides,
// more rows than one block's warps, and a single row or column.
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/layer_norm.h"
#include "ember/kernels/cuda/layer_norm.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::kernels::LayerNormShape;
using ember::test::matches;
using ember::test::poisoned;
using ember::test::random_vector;

namespace {

std::string describe(const LayerNormShape& s, bool affine) {
  return "[" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]" + (affine ? " affine" : " no weight/bias");
}

template <class T>
T* or_null(std::vector<T>& v, bool keep) {
  return keep ? v.data() : nullptr;
}

const std::vector<LayerNormShape> kShapes{{3, 5}, {1, 40}, {7, 1}, {20, 32}, {4, 97}, {2, 300}};

}  // namespace

TEMPLATE_TEST_CASE("emulated layer_norm forward matches the CPU", "[cuda-emulated][layer_norm]", float, double) {
  std::mt19937_64 rng(27);
  for (const LayerNormShape& s : kShapes) {
    for (bool affine : {true, false}) {
      const std::string what = describe(s, affine);
      const size_t n = static_cast<size_t>(s.numel()), r = static_cast<size_t>(s.rows), c = static_cast<size_t>(s.cols);
      // An offset keeps the mean away from 0, so a wrong mean shows in the variance too.
      auto x = random_vector<TestType>(n, rng, -1.0, 3.0);
      auto w = random_vector<TestType>(c, rng, 0.5, 1.5), b = random_vector<TestType>(c, rng);
      std::vector<TestType> want_y(n), want_mean(r), want_invstd(r);
      auto got_y = poisoned<TestType>(n), got_mean = poisoned<TestType>(r), got_invstd = poisoned<TestType>(r);
      cpu::layer_norm_forward<TestType>(x.data(), or_null(w, affine), or_null(b, affine), want_y.data(),
                                        want_mean.data(), want_invstd.data(), 1e-5, s);
      cuda::layer_norm_forward<TestType>(x.data(), or_null(w, affine), or_null(b, affine), got_y.data(),
                                         got_mean.data(), got_invstd.data(), 1e-5, s, nullptr);
      CHECK(matches(got_y, want_y, "layer_norm forward y, " + what));
      CHECK(matches(got_mean, want_mean, "layer_norm forward mean, " + what));
      CHECK(matches(got_invstd, want_invstd, "layer_norm forward invstd, " + what));
    }
  }
}

TEMPLATE_TEST_CASE("emulated layer_norm backward matches the CPU, each output optional",
                   "[cuda-emulated][layer_norm]", float, double) {
  std::mt19937_64 rng(28);
  for (const LayerNormShape& s : kShapes) {
    for (bool affine : {true, false}) {
      const std::string what = describe(s, affine);
      const size_t n = static_cast<size_t>(s.numel()), r = static_cast<size_t>(s.rows), c = static_cast<size_t>(s.cols);
      auto x = random_vector<TestType>(n, rng, -1.0, 3.0), dy = random_vector<TestType>(n, rng);
      auto w = random_vector<TestType>(c, rng, 0.5, 1.5);
      auto mean = random_vector<TestType>(r, rng, 0.5, 1.5), invstd = random_vector<TestType>(r, rng, 0.5, 2.0);
      std::vector<TestType> want_dx(n), want_dw(c), want_db(c);
      auto got_dx = poisoned<TestType>(n), got_dw = poisoned<TestType>(c), got_db = poisoned<TestType>(c);
      cpu::layer_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                         want_dx.data(), want_dw.data(), want_db.data(), s);
      cuda::layer_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                          got_dx.data(), got_dw.data(), got_db.data(), s, nullptr);
      CHECK(matches(got_dx, want_dx, "layer_norm backward dx, " + what));
      CHECK(matches(got_dw, want_dw, "layer_norm backward dweight, " + what));
      CHECK(matches(got_db, want_db, "layer_norm backward dbias, " + what));
      auto dx_only = poisoned<TestType>(n), dw_only = poisoned<TestType>(c), db_only = poisoned<TestType>(c);
      cuda::layer_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                          dx_only.data(), nullptr, nullptr, s, nullptr);
      cuda::layer_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                          nullptr, dw_only.data(), db_only.data(), s, nullptr);
      CHECK(matches(dx_only, want_dx, "layer_norm backward dx alone, " + what));
      CHECK(matches(dw_only, want_dw, "layer_norm backward dweight alone, " + what));
      CHECK(matches(db_only, want_db, "layer_norm backward dbias alone, " + what));
    }
  }
}
