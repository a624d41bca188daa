// The CPU thread count every kernel uses, as torch::set_num_threads.
// defines: ember::set_num_threads, ember::get_num_threads
#pragma once

namespace ember {
void set_num_threads(int threads);  // threads >= 1; throws ember::Error otherwise
int get_num_threads();
}  // namespace ember
