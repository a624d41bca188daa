// Internal to kernels/cpu/: the two passes of a mean and a biased variance over a contiguous
// range, summed in double, shared by batch_norm (per channel plane) and layer_norm (per row).
// defines: ember::kernels::cpu::detail::{sum_in_double, squared_deviation_sum}
//
// Out of line and compiled for AVX-512, AVX2 and the baseline (EMBER_VECTOR_CLONES, threading.h);
// callers call them once per plane or row, so the call costs nothing next to the loop.
#pragma once

#include <cstdint>

namespace ember::kernels::cpu::detail {

// sum x[i] over [0, n), in double.
double sum_in_double(const float* x, int64_t n);
double sum_in_double(const double* x, int64_t n);

// sum (x[i] - mean)^2 over [0, n), in double.
double squared_deviation_sum(const float* x, int64_t n, double mean);
double squared_deviation_sum(const double* x, int64_t n, double mean);

}  // namespace ember::kernels::cpu::detail
