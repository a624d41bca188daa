// Runs the CUDA tests when a GPU is present; otherwise exits 77 so ctest reports them skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "core/cuda/runtime.h"

int main(int argc, char** argv) {
  if (ember::cuda::device_count() == 0) {
    std::printf("no CUDA device: skipping the CUDA tests\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
