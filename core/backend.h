// Which CUDA kernels an op runs: ember's hand-written ones (the default) or the vendor libraries
// (cuBLAS for matmul / linear, cuDNN for conv2d, max_pool2d and relu), as a second reference and
// as the benchmark suite's yardstick. CPU ops ignore it.
// defines: ember::Backend, set_backend, backend, backend_name, BackendGuard
//
// The first call to backend() reads EMBER_BACKEND=handwritten|vendor from the environment; an
// unknown value throws. set_backend() overrides it for the whole process.
#pragma once

#include <string_view>

namespace ember {

enum class Backend { Handwritten, Vendor };

void set_backend(Backend backend);
Backend backend();
const char* backend_name(Backend backend);
Backend parse_backend(std::string_view name);  // "handwritten" | "vendor"; throws otherwise

// Sets a backend for its scope and restores the previous one afterwards.
class BackendGuard {
 public:
  explicit BackendGuard(Backend backend) : previous_(ember::backend()) { set_backend(backend); }
  ~BackendGuard() { set_backend(previous_); }
  BackendGuard(const BackendGuard&) = delete;
  BackendGuard& operator=(const BackendGuard&) = delete;

 private:
  Backend previous_;
};

}  // namespace ember
