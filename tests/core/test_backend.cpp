// The backend switch between hand-written and vendor CUDA kernels.
#include <catch2/catch.hpp>

#include "ember/core/backend.h"

TEST_CASE("set_backend switches between hand-written and vendor kernels; BackendGuard restores") {
  ember::Backend start = ember::backend();
  {
    ember::BackendGuard guard(ember::Backend::Vendor);
    CHECK(ember::backend() == ember::Backend::Vendor);
    CHECK(std::string(ember::backend_name(ember::backend())) == "vendor");
  }
  CHECK(ember::backend() == start);
  CHECK(ember::parse_backend("handwritten") == ember::Backend::Handwritten);
  REQUIRE_THROWS_WITH(ember::parse_backend("cublas"),
                      Catch::Contains("expected \"handwritten\" or \"vendor\" (EMBER_BACKEND), got \"cublas\""));
}
