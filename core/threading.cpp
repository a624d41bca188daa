#include "ember/core/threading.h"

#include "ember/common/error.h"
#include "ember/kernels/cpu/threading.h"

namespace ember {

void set_num_threads(int threads) {
  EMBER_CHECK(threads >= 1, "set_num_threads: expected at least 1 thread, got ", threads);
  kernels::cpu::set_num_threads(threads);
}

int get_num_threads() { return kernels::cpu::get_num_threads(); }

}  // namespace ember
