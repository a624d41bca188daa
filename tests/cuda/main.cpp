// Runs the CUDA tests when a GPU is present; otherwise exits 77 so ctest reports them skipped.
// `--probe` only answers the question: 0 with a GPU, 77 without (other ctest entries use it).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>

#include "ember/core/cuda/runtime.h"

int main(int argc, char** argv) {
  if (ember::cuda::device_count() == 0) {
    std::printf("no CUDA device: skipping the CUDA tests\n");
    return 77;
  }
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) return 0;
  return Catch::Session().run(argc, argv);
}
