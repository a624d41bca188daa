// The thread count every CPU kernel runs with.
// defines: ember::kernels::cpu::set_num_threads, get_num_threads, EMBER_VECTOR_CLONES
//
// Note: kernels split their work into a fixed partition that depends only on the sizes and on this
// count, and combine partial results in a fixed order, so a result is bit-for-bit the same from
// run to run for a fixed thread count (it may differ between thread counts).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

// Compiles a plain loop three times, for AVX-512, AVX2 and the baseline, and picks one when the
// program loads (target_clones): the default build targets x86-64 without AVX, so such loops ran
// 4 floats at a time. For loops without arithmetic that could fuse differently (a contracted
// a * b + c would round differently in each clone).
// Put it on a non-template function with no OpenMP region inside: clang (14 at least) rejects it
// on templates, and clang compiles an OpenMP region's body as a function of its own that does not
// inherit the clone's target. parallel_ranges below keeps the region outside the cloned loop.
#define EMBER_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace ember::kernels::cpu {

// Calls body(begin, end) on `threads` OpenMP threads, over even contiguous ranges that cover
// [0, n) in order (threads <= 1: body(0, n) on the calling thread). The ranges depend only on n
// and threads, so elementwise results do not depend on the schedule.
template <class Body>
void parallel_ranges(int64_t n, int threads, const Body& body) {
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads(), chunk = (n + team - 1) / team;
    const int64_t begin = std::min(n, chunk * omp_get_thread_num()), end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

// Sets the number of OpenMP threads each kernel uses from now on. n >= 1; n <= 0 restores the
// default, omp_get_max_threads() as seen at the first call (OMP_NUM_THREADS).
void set_num_threads(int n);

// The count set by set_num_threads, or the default; always >= 1.
int get_num_threads();

}  // namespace ember::kernels::cpu
