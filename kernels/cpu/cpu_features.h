// Which vector instruction set this CPU's hand-vectorised kernels use, detected once.
// defines: ember::kernels::cpu::{SimdIsa, simd_isa}
#pragma once

#include <cstdlib>
#include <cstring>

namespace ember::kernels::cpu {

// none: scalar code only; avx2: AVX2 and FMA; avx512: AVX-512F.
enum class SimdIsa { none, avx2, avx512 };

// The widest set this CPU has, read once per process. EMBER_GEMM_ISA=avx2 or =scalar forces a
// narrower one (to test every path on one CPU); forcing avx2 on a CPU without it gives none.
inline SimdIsa simd_isa() {
  static const SimdIsa isa = [] {
    __builtin_cpu_init();
    const char* forced = std::getenv("EMBER_GEMM_ISA");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (forced && std::strcmp(forced, "scalar") == 0) return SimdIsa::none;
    if (forced && std::strcmp(forced, "avx2") == 0) return avx2 ? SimdIsa::avx2 : SimdIsa::none;
    if (__builtin_cpu_supports("avx512f")) return SimdIsa::avx512;
    return avx2 ? SimdIsa::avx2 : SimdIsa::none;
  }();
  return isa;
}

}  // namespace ember::kernels::cpu
