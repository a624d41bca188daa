// libFuzzer harness: read_safetensors on arbitrary bytes. Its contract (nn/checkpoint.h) is to
// return tensors or throw ember::Error; any other exception escapes this function and libFuzzer
// reports it as a crash, as it does sanitizer reports, leaks, hangs and huge allocations.
#include <cstdint>

#include "fuzz/input_file.h"
#include "ember/nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ember::fuzz::InputFile file;
  const std::string& path = file.write(data, size);
  try {
    for (const auto& [name, tensor] : ember::nn::read_safetensors(path)) {
      // Every tensor read must be as large as its shape says (ASan checks the last byte is ours).
      if (tensor.nbytes() == 0) continue;
      volatile char last = static_cast<const char*>(tensor.data_ptr())[tensor.nbytes() - 1];
      (void)last;
    }
  } catch (const ember::Error&) {
  }
  return 0;
}
