// The seeded random number generator behind rand, randn, dropout and parameter initialisation.
// defines: ember::Generator, ember::default_generator, ember::manual_seed
#pragma once

#include <cstdint>
#include <mutex>

namespace ember {

// Philox4x32-10 state: a seed and a counter offset (common/philox.h). Each draw of n numbers
// takes the next ceil(n / 4) counters, so the CPU and CUDA kernels, given the same (seed,
// offset), produce the same numbers.
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}

  void manual_seed(uint64_t seed);
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset);
  // Reserves the counters for n numbers and returns the offset the draw starts at.
  uint64_t reserve(uint64_t n);

 private:
  std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
// Seeds the default generator, as torch::manual_seed.
void manual_seed(uint64_t seed);

}  // namespace ember
