#include "ember/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <vector>

#include "ember/common/error.h"

namespace ember::data {

namespace {

// An IDX file's bytes: inflated when the file starts with the gzip magic 1f 8b (whatever its
// name), as they are otherwise. Reads are incremental, so the header can be checked before any of
// the body is decompressed, and the body read no further than the header allows.
//
// Note: zlib's gzread API is not used: when a read fills the caller's buffer exactly as the input
// runs out, it reports a stream cut inside its trailer as a clean end. inflate() itself says
// Z_STREAM_END only once the trailer (CRC and length) is read and verified.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    EMBER_CHECK(file_ != nullptr, "mnist: cannot open ", path, ": ", std::strerror(errno));
    unsigned char magic[2] = {0, 0};
    gzipped_ = read_file(magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    std::rewind(file_);
    if (gzipped_ && inflateInit2(&stream_, 15 + 16) != Z_OK) {  // 15-bit window, gzip wrapper only
      std::fclose(file_);
      throw OutOfMemory(detail::str("mnist: cannot start decompressing ", path));
    }
  }
  ~IdxFile() {
    if (gzipped_) inflateEnd(&stream_);
    std::fclose(file_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  // Reads up to `size` bytes into `out` and returns how many; fewer only at the end of the data
  // (or of a gzip stream cut short, which ended_early() then says). Throws when the file cannot be
  // read or the gzip data is corrupt.
  size_t read(unsigned char* out, size_t size) { return gzipped_ ? inflate_into(out, size) : read_file(out, size); }
  bool gzipped() const { return gzipped_; }
  bool ended_early() const { return ended_early_; }
  const std::string& path() const { return path_; }

 private:
  size_t read_file(unsigned char* out, size_t size) {
    const size_t got = std::fread(out, 1, size, file_);
    EMBER_CHECK(got == size || std::ferror(file_) == 0, "mnist: cannot read ", path_, ": ", std::strerror(errno));
    return got;
  }

  size_t inflate_into(unsigned char* out, size_t size) {
    size_t done = 0;
    while (done < size && !finished_) {
      if (stream_.avail_in == 0) {
        stream_.avail_in = static_cast<uInt>(read_file(input_, sizeof input_));
        stream_.next_in = input_;
        if (stream_.avail_in == 0) {  // the file ends before the gzip stream does
          ended_early_ = true;
          break;
        }
      }
      stream_.next_out = out + done;
      stream_.avail_out = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
      const uInt room = stream_.avail_out;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      done += room - stream_.avail_out;
      if (status == Z_STREAM_END) {
        next_member();
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        throw Error(detail::str("mnist: ", path_, " is not a valid gzip file: ",
                                stream_.msg != nullptr ? stream_.msg : zError(status)));
      }
    }
    return done;
  }

  // After one gzip member: another may follow (files joined with cat); any other bytes are
  // ignored, as gunzip and zlib's gzread do.
  void next_member() {
    if (stream_.avail_in < 2) {  // the next member's magic may straddle two reads
      const uInt kept = stream_.avail_in;
      if (kept == 1) input_[0] = stream_.next_in[0];
      stream_.avail_in = kept + static_cast<uInt>(read_file(input_ + kept, sizeof input_ - kept));
      stream_.next_in = input_;
    }
    if (stream_.avail_in >= 2 && stream_.next_in[0] == 0x1f && stream_.next_in[1] == 0x8b) {
      inflateReset(&stream_);
    } else {
      finished_ = true;
    }
  }

  std::string path_;
  std::FILE* file_;
  bool gzipped_ = false;
  z_stream stream_{};
  unsigned char input_[1 << 16];
  bool finished_ = false;     // the last gzip member has ended
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
