// The thread count every CPU kernel runs with.
// defines: ember::kernels::cpu::set_num_threads, get_num_threads, EMBER_VECTOR_CLONES
//
// Note: kernels split their work into a fixed partition that depends only on the sizes and on this
// count, and combine partial results in a fixed order, so a result is bit-for-bit the same from
// run to run for a fixed thread count (it may differ between thread counts).
#pragma once

// Compiles a plain loop three times, for AVX-512, AVX2 and the baseline, and picks one when the
// program loads (GCC's target_clones): the default build targets x86-64 without AVX, so such
// loops ran 4 floats at a time. For loops without arithmetic that could fuse differently (a
// contracted a * b + c would round differently in each clone).
#define EMBER_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace ember::kernels::cpu {

// Sets the number of OpenMP threads each kernel uses from now on. n >= 1; n <= 0 restores the
// default, omp_get_max_threads() as seen at the first call (OMP_NUM_THREADS).
void set_num_threads(int n);

// The count set by set_num_threads, or the default; always >= 1.
int get_num_threads();

}  // namespace ember::kernels::cpu
