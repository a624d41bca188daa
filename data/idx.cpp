#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <vector>

#include "common/error.h"

namespace ember::data {

namespace {

// An IDX file read through zlib, which decompresses a gzip stream (recognised by its first bytes,
// 1f 8b, whatever the file's name) and passes any other file through as it is. Reads are
// incremental, so the header can be checked before any of the body is decompressed.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    EMBER_CHECK(file_ != nullptr, "mnist: cannot open ", path, ": ", std::strerror(errno));
    gzbuffer(file_, 1 << 16);
  }
  ~IdxFile() { gzclose(file_); }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  // Reads up to `size` bytes into `out` and returns how many; fewer only at the end of the data.
  // Throws when the file cannot be read or the gzip data is corrupt.
  size_t read(unsigned char* out, size_t size) {
    size_t done = 0;
    while (done < size) {
      const int n = gzread(file_, out + done, static_cast<unsigned>(std::min<size_t>(size - done, 1u << 30)));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (done < size) check_end();
    return done;
  }
  bool gzipped() const { return gzdirect(file_) == 0; }
  bool ended_early() const { return ended_early_; }
  const std::string& path() const { return path_; }

 private:
  // Note: zlib reports a gzip stream that stops before its trailer as Z_BUF_ERROR ("unexpected end
  // of file"): the file was cut short. Z_ERRNO is a failed read(); anything else (Z_DATA_ERROR, a
  // bad CRC) means corrupt data.
  void check_end() {
    int error = Z_OK;
    const char* message = gzerror(file_, &error);
    std::string reason = message != nullptr ? message : "";
    if (reason.rfind(path_ + ": ", 0) == 0) reason.erase(0, path_.size() + 2);  // zlib prefixes the path
    if (error == Z_BUF_ERROR) {
      ended_early_ = true;
      return;
    }
    EMBER_CHECK(error != Z_ERRNO, "mnist: cannot read ", path_, ": ", reason);
    EMBER_CHECK(error == Z_OK || error == Z_STREAM_END, "mnist: ", path_, " is not a valid gzip file: ", reason);
  }

  std::string path_;
  gzFile file_;
  bool ended_early_ = false;  // a gzip stream cut off before its end (a truncated download)
};

// What an IDX file of one kind looks like.
struct IdxKind {
  uint32_t magic;
  int ndim;
  const char* name;  // "image" or "label"
  size_t header_bytes() const { return 4 + 4 * static_cast<size_t>(ndim); }
};

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

const char* cut_note(const IdxFile& file) { return file.ended_early() ? " (the gzip stream ends early)" : ""; }

// Reads and checks the magic and the header; returns the dims.
Shape read_header(IdxFile& file, const IdxKind& kind) {
  unsigned char header[16];
  const size_t got = file.read(header, kind.header_bytes());
  const char* decompressed = file.gzipped() ? " decompressed" : "";
  EMBER_CHECK(got >= 4, "mnist: ", file.path(), " is truncated: expected an IDX ", kind.name, " file (",
              kind.header_bytes(), "-byte header), found ", got, decompressed, " bytes", cut_note(file));
  EMBER_CHECK(big_endian(header) == kind.magic, "mnist: ", file.path(), " has magic ", hex(big_endian(header)),
              ", expected ", hex(kind.magic), " (an IDX ", kind.name, " file)");
  EMBER_CHECK(got == kind.header_bytes(), "mnist: ", file.path(), " is truncated: expected a ", kind.header_bytes(),
              "-byte IDX header, found ", got, decompressed, " bytes", cut_note(file));
  Shape dims;
  for (int d = 0; d < kind.ndim; ++d) dims.push_back(big_endian(header + 4 + 4 * d));
  return dims;
}

// Reads the body, `expected` bytes, into memory that grows with the data actually read, never past
// `expected`: a header that claims more than the file holds costs only what the file holds. One
// byte more is then asked for, to tell an exact body from an over-long one without decompressing
// the rest (a gzip bomb costs no more than the file it claims to be).
std::vector<unsigned char> read_body(IdxFile& file, const IdxKind& kind, const Shape& dims, uint64_t expected) {
  std::vector<unsigned char> body;
  size_t got = 0;
  while (got < expected) {
    body.resize(std::min<uint64_t>(expected, std::max<uint64_t>(2 * body.size(), 1 << 16)));
    got += file.read(body.data() + got, body.size() - got);
    if (got < body.size()) break;
  }
  body.resize(got);
  auto mismatch = [&](const char* what, const std::string& found) {
    return Error(detail::str("mnist: ", file.path(), " is ", what, ": expected ", expected, " bytes of ", kind.name,
                             " data after the ", kind.header_bytes(), "-byte header (dims ", dims, "), found ",
                             found, cut_note(file)));
  };
  if (got < expected) throw mismatch("truncated", std::to_string(got));
  unsigned char extra = 0;
  if (file.read(&extra, 1) == 1) {
    if (file.gzipped()) throw mismatch("too long", "more (the decompressed data goes on past them)");
    std::error_code error;
    const auto size = std::filesystem::file_size(file.path(), error);
    throw mismatch("too long", error ? "more" : std::to_string(size - kind.header_bytes()));
  }
  // A gzip stream cut exactly at a record boundary is still a damaged file.
  EMBER_CHECK(!file.ended_early(), "mnist: ", file.path(), " is truncated: the gzip stream ends before its trailer");
  return body;
}

// The dims and the body of an IDX file of `kind`, checked in this order: magic, header, the size
// the dims imply (contiguous_size: no overflow, even with a count of 0), then the body's length.
struct IdxContents {
  Shape dims;
  std::vector<unsigned char> body;
};

IdxContents read_idx(const std::string& path, const IdxKind& kind) {
  try {
    IdxFile file(path);
    Shape dims = read_header(file, kind);
    const int64_t expected =
        contiguous_size(dims, kUInt8, detail::str("mnist: ", path, ": the IDX ", kind.name, " header's dims")).nbytes;
    std::vector<unsigned char> body = read_body(file, kind, dims, static_cast<uint64_t>(expected));
    return {std::move(dims), std::move(body)};
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(detail::str("mnist: ", path, ": out of memory while reading it"));
  }
}

}  // namespace

Tensor read_idx_images(const std::string& path) {
  IdxContents idx = read_idx(path, {.magic = 0x00000803, .ndim = 3, .name = "image"});
  Tensor images = empty(idx.dims, {.dtype = kUInt8});
  if (images.nbytes() > 0) std::memcpy(images.data_ptr(), idx.body.data(), images.nbytes());
  return images;
}

Tensor read_idx_labels(const std::string& path) {
  IdxContents idx = read_idx(path, {.magic = 0x00000801, .ndim = 1, .name = "label"});
  Tensor labels = empty(idx.dims, {.dtype = kInt64});
  std::copy(idx.body.begin(), idx.body.end(), labels.data<int64_t>());
  return labels;
}

}  // namespace ember::data
