#include "ember/kernels/cpu/threading.h"

#include <omp.h>

#include <atomic>

namespace ember::kernels::cpu {
namespace {

std::atomic<int> g_num_threads{0};  // 0: not set, use the default

int default_num_threads() {
  static const int n = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
  return n;
}

}  // namespace

void set_num_threads(int n) { g_num_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

int get_num_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : default_num_threads();
}

}  // namespace ember::kernels::cpu
