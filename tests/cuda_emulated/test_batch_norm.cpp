// batch_norm on the emulator against its CPU twin (kernels/cpu/batch_norm.h): the training
// forward (batch statistics, save_mean / save_invstd, running statistics), the evaluation forward
// and the backward of both, with and without weight and bias, over shapes where a channel's values
// span several block strides, where spatial is 1 ([N, C]) and where a batch has one element.
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ember/kernels/cpu/batch_norm.h"
#include "ember/kernels/cuda/batch_norm.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::kernels::BatchNormShape;
using ember::test::matches;
using ember::test::poisoned;
using ember::test::random_vector;

namespace {

std::string describe(const BatchNormShape& s, bool affine) {
  return "[" + std::to_string(s.batch) + ", " + std::to_string(s.channels) + ", " + std::to_string(s.spatial) +
         "]" + (affine ? " affine" : " no weight/bias");
}

template <class T>
T* or_null(std::vector<T>& v, bool keep) {
  return keep ? v.data() : nullptr;
}

const std::vector<BatchNormShape> kShapes{{2, 3, 5}, {1, 4, 9}, {3, 1, 1}, {16, 5, 1}, {5, 3, 300}, {4, 70, 7}};

}  // namespace

TEMPLATE_TEST_CASE("emulated batch_norm forwards match the CPU, training and evaluation",
                   "[cuda-emulated][batch_norm]", float, double) {
  std::mt19937_64 rng(17);
  for (const BatchNormShape& s : kShapes) {
    for (bool affine : {true, false}) {
      const std::string what = describe(s, affine);
      const size_t n = static_cast<size_t>(s.numel()), c = static_cast<size_t>(s.channels);
      // An offset keeps the mean away from 0, so a wrong mean shows in the variance too.
      auto x = random_vector<TestType>(n, rng, -1.0, 3.0);
      auto w = random_vector<TestType>(c, rng, 0.5, 1.5), b = random_vector<TestType>(c, rng);
      auto running_mean = random_vector<TestType>(c, rng), running_var = random_vector<TestType>(c, rng, 0.5, 2.0);
      auto want_rm = running_mean, want_rv = running_var, got_rm = running_mean, got_rv = running_var;
      std::vector<TestType> want_y(n), want_mean(c), want_invstd(c);
      auto got_y = poisoned<TestType>(n), got_mean = poisoned<TestType>(c), got_invstd = poisoned<TestType>(c);
      cpu::batch_norm_forward_training<TestType>(x.data(), or_null(w, affine), or_null(b, affine), want_y.data(),
                                                 want_mean.data(), want_invstd.data(), want_rm.data(),
                                                 want_rv.data(), 0.1, 1e-5, s);
      cuda::batch_norm_forward_training<TestType>(x.data(), or_null(w, affine), or_null(b, affine), got_y.data(),
                                                  got_mean.data(), got_invstd.data(), got_rm.data(), got_rv.data(),
                                                  0.1, 1e-5, s, nullptr);
      CHECK(matches(got_y, want_y, "training forward y, " + what));
      CHECK(matches(got_mean, want_mean, "training forward mean, " + what));
      CHECK(matches(got_invstd, want_invstd, "training forward invstd, " + what));
      CHECK(matches(got_rm, want_rm, "running_mean, " + what));
      CHECK(matches(got_rv, want_rv, "running_var, " + what));

      std::vector<TestType> want_eval(n), want_eval_invstd(c);
      auto got_eval = poisoned<TestType>(n), got_eval_invstd = poisoned<TestType>(c);
      cpu::batch_norm_forward_eval<TestType>(x.data(), running_mean.data(), running_var.data(), or_null(w, affine),
                                             or_null(b, affine), want_eval.data(), want_eval_invstd.data(), 1e-3, s);
      cuda::batch_norm_forward_eval<TestType>(x.data(), running_mean.data(), running_var.data(), or_null(w, affine),
                                              or_null(b, affine), got_eval.data(), got_eval_invstd.data(), 1e-3, s,
                                              nullptr);
      CHECK(matches(got_eval, want_eval, "eval forward y, " + what));
      CHECK(matches(got_eval_invstd, want_eval_invstd, "eval forward invstd, " + what));
    }
  }
}

TEMPLATE_TEST_CASE("emulated batch_norm backward matches the CPU, training and evaluation, each output optional",
                   "[cuda-emulated][batch_norm]", float, double) {
  std::mt19937_64 rng(18);
  for (const BatchNormShape& s : kShapes) {
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const std::string what = describe(s, affine) + (training ? " training" : " eval");
        const size_t n = static_cast<size_t>(s.numel()), c = static_cast<size_t>(s.channels);
        auto x = random_vector<TestType>(n, rng, -1.0, 3.0), dy = random_vector<TestType>(n, rng);
        auto w = random_vector<TestType>(c, rng, 0.5, 1.5);
        auto mean = random_vector<TestType>(c, rng, 0.5, 1.5), invstd = random_vector<TestType>(c, rng, 0.5, 2.0);
        std::vector<TestType> want_dx(n), want_dw(c), want_db(c);
        auto got_dx = poisoned<TestType>(n), got_dw = poisoned<TestType>(c), got_db = poisoned<TestType>(c);
        cpu::batch_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                           want_dx.data(), want_dw.data(), want_db.data(), training, s);
        cuda::batch_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                            got_dx.data(), got_dw.data(), got_db.data(), training, s, nullptr);
        CHECK(matches(got_dx, want_dx, "backward dx, " + what));
        CHECK(matches(got_dw, want_dw, "backward dweight, " + what));
        CHECK(matches(got_db, want_db, "backward dbias, " + what));
        // dx alone (no parameter gradients wanted), and the parameter gradients alone.
        auto dx_only = poisoned<TestType>(n), dw_only = poisoned<TestType>(c), db_only = poisoned<TestType>(c);
        cuda::batch_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                            dx_only.data(), nullptr, nullptr, training, s, nullptr);
        cuda::batch_norm_backward<TestType>(dy.data(), x.data(), mean.data(), invstd.data(), or_null(w, affine),
                                            nullptr, dw_only.data(), db_only.data(), training, s, nullptr);
        CHECK(matches(dx_only, want_dx, "backward dx alone, " + what));
        CHECK(matches(dw_only, want_dw, "backward dweight alone, " + what));
        CHECK(matches(db_only, want_db, "backward dbias alone, " + what));
      }
    }
  }
}
