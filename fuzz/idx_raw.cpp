// libFuzzer harness: the IDX readers on arbitrary bytes, as the file holds them (a file starting
// with 1f 8b is taken as gzip, so the seeds include gzipped files). Their contract (data/idx.h) is
// to return a tensor or throw ember::Error; anything else is a crash for libFuzzer.
#include <cstdint>

#include "ember/data/idx.h"
#include "fuzz/input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ember::fuzz::InputFile file;
  const std::string& path = file.write(data, size);
  try {
    ember::data::read_idx_images(path);
  } catch (const ember::Error&) {
  }
  try {
    ember::data::read_idx_labels(path);
  } catch (const ember::Error&) {
  }
  return 0;
}
