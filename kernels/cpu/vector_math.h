// float32 exp, tanh and erf written without branches or library calls, so that a loop calling
// them under `#pragma omp simd` vectorises (std::exp / std::tanh / std::erf are opaque calls that
// keep GCC and clang scalar; PyTorch uses Sleef's vector versions). Meant for loops in
// EMBER_VECTOR_CLONES functions (threading.h), which compile them for AVX-512, AVX2 and SSE2.
// Accuracy against the C library's double result rounded to float (tests/kernels/
// test_vector_math.cpp): exp and tanh within 1 ulp over the whole float range (subnormal exp
// results included), expm1 within 2, erf within 8 ulp (5e-7 relative, near +-1). NaN gives NaN,
// +-inf the limits. GCC vectorises the selects only under -fno-trapping-math (kernels/CMakeLists.txt).
// defines: ember::kernels::cpu::vmath::{exp, expm1, tanh, erf}
#pragma once

#include <bit>
#include <cstdint>

namespace ember::kernels::cpu::vmath {

// e^x: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite: ln2 in two parts, so r is exact enough),
// e^r by Cephes' degree-6 polynomial, then times 2^n as two powers of two so that n down to -150
// (subnormal results) and up to 128 (overflow to inf) need no special case.
[[gnu::always_inline]] inline float exp(float x) {
  x = x > 88.8f ? 88.8f : x;  // NaN compares false and passes through
  x = x < -104.0f ? -104.0f : x;
  // round(x / ln2) by the 1.5 * 2^23 trick: the sum's low mantissa bits hold n as an integer.
  constexpr float kShift = 12582912.0f;
  const float shifted = x * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kShift);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  const int32_t half = ni >> 1;  // ni = half + rest, each in [-75, 64]: both powers are normal floats
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(half + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(ni - half + 127) << 23);
  return er * s1 * s2;
}

// e^x - 1: the Taylor polynomial to degree 8 for |x| < 0.5 (error < 6e-9 there), where
// e^x - 1 would cancel; e^x - 1 elsewhere.
[[gnu::always_inline]] inline float expm1(float x) {
  float p = 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  const float small = p * (x * x) + x;
  const float large = exp(x) - 1.0f;
  return (x < 0.5f && x > -0.5f) ? small : large;  // NaN: false, and `large` is NaN
}

// tanh: an odd polynomial (Cephes) for |x| < 0.625, where 1 - 2 / (e^2|x| + 1) would cancel;
// that formula, with x's sign, elsewhere (e^2|x| = inf gives exactly 1).
[[gnu::always_inline]] inline float tanh(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float a = x < 0.0f ? -x : x;
  const float large = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  const float signed_large = x < 0.0f ? -large : large;
  return a < 0.625f ? small : signed_large;  // NaN: a < 0.625 is false and `large` is NaN
}

// erf: Eigen's (and XLA's) rational approximation, odd degree 13 over even degree 8, on x clamped
// to [-4, 4] (erf is +-1 in float beyond).
[[gnu::always_inline]] inline float erf(float x) {
  x = x > 4.0f ? 4.0f : x;
  x = x < -4.0f ? -4.0f : x;
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * (p / q);  // p / q first: x * p would lose subnormal x
}

}  // namespace ember::kernels::cpu::vmath
