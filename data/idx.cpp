#include "data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.h"

namespace ember::data {

namespace {

// A file's bytes: decompressed when it starts with the gzip magic 1f 8b, as they are otherwise.
struct FileBytes {
  std::vector<unsigned char> bytes;
  bool gzipped = false;
  bool ended_early = false;  // a gzip stream cut off before its end (a truncated download)
};

std::vector<unsigned char> read_raw(std::FILE* file, const std::string& path) {
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, file)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  EMBER_CHECK(!failed, "mnist: cannot read ", path, ": ", std::strerror(error));
  return bytes;
}

// Note: zlib reports a gzip stream that stops before its trailer as Z_BUF_ERROR ("unexpected end
// of file"): the file was cut short. Anything else (Z_DATA_ERROR, a bad CRC) means corrupt data.
FileBytes read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  EMBER_CHECK(file != nullptr, "mnist: cannot open ", path, ": ", std::strerror(errno));
  gzbuffer(file, 1 << 17);
  FileBytes out;
  out.gzipped = true;
  unsigned char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(file, chunk, sizeof chunk)) > 0) out.bytes.insert(out.bytes.end(), chunk, chunk + n);
  int error = Z_OK;
  const char* message = gzerror(file, &error);
  std::string reason = message != nullptr ? message : "";
  if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);  // zlib prefixes the path
  gzclose(file);
  if (error == Z_BUF_ERROR) {
    out.ended_early = true;
  } else {
    EMBER_CHECK(n == 0 && (error == Z_OK || error == Z_STREAM_END), "mnist: ", path,
                " is not a valid gzip file: ", reason);
  }
  return out;
}

FileBytes read_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  EMBER_CHECK(file != nullptr, "mnist: cannot open ", path, ": ", std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, file);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    std::fclose(file);
    return read_gzip(path);
  }
  std::rewind(file);
  return {.bytes = read_raw(file, path)};
}

uint32_t big_endian(const std::vector<unsigned char>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// Checks the magic, the header and the exact data length; returns the dims.
std::vector<int64_t> parse_header(const FileBytes& file, const std::string& path, uint32_t magic, int ndim,
                                  const char* kind) {
  const std::vector<unsigned char>& bytes = file.bytes;
  const char* cut = file.ended_early ? " (the gzip stream ends early)" : "";
  const char* decompressed = file.gzipped ? " decompressed" : "";
  const size_t header = 4 + 4 * static_cast<size_t>(ndim);
  EMBER_CHECK(bytes.size() >= 4, "mnist: ", path, " is truncated: expected an IDX ", kind, " file (", header,
              "-byte header), found ", bytes.size(), decompressed, " bytes", cut);
  EMBER_CHECK(big_endian(bytes, 0) == magic, "mnist: ", path, " has magic ", hex(big_endian(bytes, 0)),
              ", expected ", hex(magic), " (an IDX ", kind, " file)");
  EMBER_CHECK(bytes.size() >= header, "mnist: ", path, " is truncated: expected a ", header,
              "-byte IDX header, found ", bytes.size(), decompressed, " bytes", cut);
  std::vector<int64_t> dims;
  // The element count saturates instead of wrapping, so a garbage header cannot match by accident.
  uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    dims.push_back(big_endian(bytes, 4 + 4 * static_cast<size_t>(d)));
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dims.back()), &count)) {
      count = std::numeric_limits<uint64_t>::max();
    }
  }
  const uint64_t found = bytes.size() - header;
  EMBER_CHECK(found == count, "mnist: ", path, " is ", found < count ? "truncated" : "too long", ": expected ", count,
              " bytes of ", kind, " data after the ", header, "-byte header (dims ", dims, "), found ", found, cut);
  // A gzip stream cut exactly at a record boundary is still a damaged file.
  EMBER_CHECK(!file.ended_early, "mnist: ", path, " is truncated: the gzip stream ends before its trailer");
  return dims;
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  FileBytes file = read_file(path);
  std::vector<int64_t> dims = parse_header(file, path, 0x00000803, 3, "image");
  Tensor images = empty(dims, {.dtype = kUInt8});
  if (images.nbytes() > 0) std::memcpy(images.data_ptr(), file.bytes.data() + 16, images.nbytes());
  return images;
}

Tensor read_idx_labels(const std::string& path) {
  FileBytes file = read_file(path);
  std::vector<int64_t> dims = parse_header(file, path, 0x00000801, 1, "label");
  Tensor labels = empty(dims, {.dtype = kInt64});
  int64_t* out = labels.data<int64_t>();
  for (int64_t i = 0; i < dims[0]; ++i) out[i] = file.bytes[8 + static_cast<size_t>(i)];
  return labels;
}

}  // namespace ember::data
