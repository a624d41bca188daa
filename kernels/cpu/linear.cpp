// Row by row, so that the inner loop runs over contiguous columns and vectorises.
#include "ember/kernels/cpu/linear.h"

#include <algorithm>

namespace ember::kernels::cpu {

template <class T>
void broadcast_rows(const T* row, int64_t rows, int64_t cols, T* out) {
  for (int64_t i = 0; i < rows; ++i) std::copy_n(row, cols, out + i * cols);
}

template <class T>
void column_sums(const T* x, int64_t rows, int64_t cols, T* out) {
  std::fill_n(out, cols, T(0));
  for (int64_t i = 0; i < rows; ++i) {
    const T* r = x + i * cols;
    for (int64_t j = 0; j < cols; ++j) out[j] += r[j];
  }
}

#define EMBER_INSTANTIATE_LINEAR(T)                                   \
  template void broadcast_rows<T>(const T*, int64_t, int64_t, T*); \
  template void column_sums<T>(const T*, int64_t, int64_t, T*);
EMBER_INSTANTIATE_LINEAR(float)
EMBER_INSTANTIATE_LINEAR(double)
#undef EMBER_INSTANTIATE_LINEAR

}  // namespace ember::kernels::cpu
