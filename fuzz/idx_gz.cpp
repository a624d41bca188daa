// libFuzzer harness: the IDX readers on gzipped files whose decompressed contents are the fuzz
// input (after a first byte that picks how much of the gzip stream to keep), so the fuzzer
// explores IDX headers and lengths behind gzip, and streams cut short, rather than deflate's
// bit stream. Contract as in idx_raw.cpp: ember::Error or a tensor, nothing else.
#include <zlib.h>

#include <cstdint>
#include <vector>

#include "ember/data/idx.h"
#include "fuzz/input_file.h"

namespace {

// `data` as a gzip stream (zlib's deflate with a gzip header and trailer).
std::vector<uint8_t> gzip(const uint8_t* data, size_t size) {
  z_stream stream{};
  deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> out(deflateBound(&stream, size));
  stream.next_in = const_cast<uint8_t*>(data);
  stream.avail_in = static_cast<uInt>(size);
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // First byte: 0-31 cuts that many bytes off the end of the gzip stream; anything else keeps it whole.
  const size_t cut = data[0] < 32 ? data[0] : 0;
  std::vector<uint8_t> gz = gzip(data + 1, size - 1);
  gz.resize(gz.size() > cut ? gz.size() - cut : 0);
  static ember::fuzz::InputFile file;
  const std::string& path = file.write(gz.data(), gz.size());
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
