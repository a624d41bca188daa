// relu on the emulator against its CPU twin: the float4 path with every tail length, and the
// scalar path that misaligned float pointers and doubles take.
#include "emulated_checks.h"

#include "ember/kernels/cpu/activation.h"
#include "ember/kernels/cuda/activation.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

// offset 0: 16-byte aligned (the float4 kernel for float); offset 1: misaligned (scalar kernel).
TEMPLATE_TEST_CASE("emulated relu forward and backward match the CPU, aligned and misaligned",
                   "[cuda-emulated][activation]", float, double) {
  std::mt19937_64 rng(11);
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(4), int64_t(5), int64_t(1027), int64_t(70001)}) {
    for (size_t offset : {size_t(0), size_t(1)}) {
      auto x_store = ember::test::random_vector<TestType>(n + 1, rng);
      auto dy_store = ember::test::random_vector<TestType>(n + 1, rng);
      std::vector<TestType> y_store = poisoned<TestType>(n + 1), dx_store = poisoned<TestType>(n + 1);
      const TestType* x = x_store.data() + offset;
      const TestType* dy = dy_store.data() + offset;
      cuda::relu_forward<TestType>(x, y_store.data() + offset, n, nullptr);
      cuda::relu_backward<TestType>(dy, y_store.data() + offset, dx_store.data() + offset, n, nullptr);
      std::vector<TestType> want_y(n), want_dx(n);
      cpu::relu_forward<TestType>(x, want_y.data(), n);
      cpu::relu_backward<TestType>(dy, want_y.data(), want_dx.data(), n);
      const std::vector<TestType> y(y_store.begin() + offset, y_store.begin() + offset + n);
      const std::vector<TestType> dx(dx_store.begin() + offset, dx_store.begin() + offset + n);
      const std::string what = "n " + std::to_string(n) + ", offset " + std::to_string(offset);
      CHECK(matches(y, want_y, "relu forward, " + what, 0.0));
      CHECK(matches(dx, want_dx, "relu backward, " + what, 0.0));
    }
  }
}

namespace {

using ember::kernels::Activation;

struct ActivationCase {
  Activation op;
  double param;
  const char* name;
};

const ActivationCase kActivations[] = {
    {Activation::Sigmoid, 0.0, "sigmoid"},       {Activation::Tanh, 0.0, "tanh"},
    {Activation::Gelu, 0.0, "gelu"},             {Activation::GeluTanh, 0.0, "gelu tanh"},
    {Activation::Silu, 0.0, "silu"},             {Activation::LeakyRelu, 0.01, "leaky_relu"},
    {Activation::LeakyRelu, 0.2, "leaky_relu 0.2"}, {Activation::Elu, 1.0, "elu"},
    {Activation::Elu, 0.5, "elu 0.5"},           {Activation::Hardswish, 0.0, "hardswish"}};

}  // namespace

// Every activation on the emulator against its CPU twin: float4 path with every tail length, and
// the scalar path; inputs in [-12, 12] (saturation, hardswish's kinks) plus large |x| values.
// float32 within 1e-5 (the CPU's vector math against CUDA's libm: a few ulp), float64 1e-12.
TEMPLATE_TEST_CASE("emulated activations forward and backward match the CPU, aligned and misaligned",
                   "[cuda-emulated][activation]", float, double) {
  std::mt19937_64 rng(12);
  const double tol = std::is_same_v<TestType, float> ? 1e-5 : 1e-12;
  for (const ActivationCase& c : kActivations) {
    for (int64_t n : {int64_t(1), int64_t(3), int64_t(4), int64_t(5), int64_t(1027), int64_t(70001)}) {
      for (size_t offset : {size_t(0), size_t(1)}) {
        auto x_store = ember::test::random_vector<TestType>(n + 1, rng, -12.0, 12.0);
        const TestType large[] = {-100, -30, -3, 0, 3, 30, 100};
        for (size_t k = 0; k < std::size(large) && k < x_store.size(); ++k) x_store[k * 3 % x_store.size()] = large[k];
        auto dy_store = ember::test::random_vector<TestType>(n + 1, rng);
        std::vector<TestType> y_store = poisoned<TestType>(n + 1), dx_store = poisoned<TestType>(n + 1);
        const TestType* x = x_store.data() + offset;
        const TestType* dy = dy_store.data() + offset;
        std::vector<TestType> want_y(n), want_dx(n);
        cpu::activation_forward<TestType>(c.op, c.param, x, want_y.data(), n);
        // The backward reads the output for sigmoid and tanh, the input for the others.
        const TestType* saved_cpu = ember::kernels::backward_reads_output(c.op) ? want_y.data() : x;
        cpu::activation_backward<TestType>(c.op, c.param, dy, saved_cpu, want_dx.data(), n);
        cuda::activation_forward<TestType>(c.op, c.param, x, y_store.data() + offset, n, nullptr);
        const TestType* saved = ember::kernels::backward_reads_output(c.op) ? y_store.data() + offset : x;
        cuda::activation_backward<TestType>(c.op, c.param, dy, saved, dx_store.data() + offset, n, nullptr);
        const std::vector<TestType> y(y_store.begin() + offset, y_store.begin() + offset + n);
        const std::vector<TestType> dx(dx_store.begin() + offset, dx_store.begin() + offset + n);
        const std::string what = std::string(c.name) + ", n " + std::to_string(n) + ", offset " + std::to_string(offset);
        CHECK(matches(y, want_y, what + " forward", tol));
        CHECK(matches(dx, want_dx, what + " backward", tol));
      }
    }
  }
}
