#include "data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace ember::data {

namespace {

// The whole file, decompressed when gzipped (gzread passes raw files through unchanged).
std::vector<unsigned char> read_file(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EMBER_CHECK(file != nullptr, "mnist: cannot open ", path, ": ", std::strerror(errno));
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(file, chunk, sizeof chunk)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  int error = 0;
  const char* message = gzerror(file, &error);
  std::string reason = error != Z_OK && error != Z_STREAM_END ? message : "";
  gzclose(file);
  EMBER_CHECK(n == 0 && reason.empty(), "mnist: ", path, " is corrupt or truncated (gzip: ", reason, ")");
  return bytes;
}

uint32_t big_endian(const std::vector<unsigned char>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

// Checks magic and exact length; returns the dims.
std::vector<int64_t> parse_header(const std::vector<unsigned char>& bytes, const std::string& path,
                                  uint32_t magic, int ndim, const char* kind) {
  size_t header = 4 + 4 * static_cast<size_t>(ndim);
  EMBER_CHECK(bytes.size() >= 8, "mnist: ", path, " is truncated: ", bytes.size(),
              " bytes, shorter than the 8-byte IDX header");
  char found[16], expected[16];
  std::snprintf(found, sizeof found, "0x%08x", big_endian(bytes, 0));
  std::snprintf(expected, sizeof expected, "0x%08x", magic);
  EMBER_CHECK(big_endian(bytes, 0) == magic, "mnist: ", path, " has magic ", found, ", expected ", expected,
              " (an IDX ", kind, " file)");
  EMBER_CHECK(bytes.size() >= header, "mnist: ", path, " is truncated: ", bytes.size(),
              " bytes, shorter than the ", header, "-byte IDX header");
  std::vector<int64_t> dims;
  size_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    dims.push_back(big_endian(bytes, 4 + 4 * d));
    count *= static_cast<size_t>(dims.back());
  }
  EMBER_CHECK(bytes.size() - header == count, "mnist: ", path, " is ",
              bytes.size() - header < count ? "truncated" : "too long", ": expected ", count, " bytes of ", kind,
              " data after the header, found ", bytes.size() - header);
  return dims;
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  std::vector<unsigned char> bytes = read_file(path);
  std::vector<int64_t> dims = parse_header(bytes, path, 0x00000803, 3, "image");
  Tensor images = empty(dims, {.dtype = kUInt8});
  std::memcpy(images.data_ptr(), bytes.data() + 16, images.nbytes());
  return images;
}

Tensor read_idx_labels(const std::string& path) {
  std::vector<unsigned char> bytes = read_file(path);
  std::vector<int64_t> dims = parse_header(bytes, path, 0x00000801, 1, "label");
  Tensor labels = empty(dims, {.dtype = kInt64});
  int64_t* out = labels.data<int64_t>();
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = bytes[8 + i];
  return labels;
}

}  // namespace ember::data
