// The process-wide choice between hand-written and vendor CUDA kernels.
#include "ember/core/backend.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "ember/common/error.h"

namespace ember {

namespace {

Backend from_environment() {
  const char* value = std::getenv("EMBER_BACKEND");
  return value == nullptr || *value == '\0' ? Backend::Handwritten : parse_backend(value);
}

std::atomic<Backend>& current() {
  static std::atomic<Backend> chosen{from_environment()};
  return chosen;
}

}  // namespace

Backend parse_backend(std::string_view name) {
  if (name == "handwritten") return Backend::Handwritten;
  if (name == "vendor") return Backend::Vendor;
  throw Error(detail::str("backend: expected \"handwritten\" or \"vendor\" (EMBER_BACKEND), got \"",
                          std::string(name), "\""));
}

void set_backend(Backend backend) { current().store(backend); }
Backend backend() { return current().load(); }

const char* backend_name(Backend backend) {
  return backend == Backend::Vendor ? "vendor" : "handwritten";
}

}  // namespace ember
