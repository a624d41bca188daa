// Small IDX files written by the data tests themselves, raw or gzipped, in a fresh temp folder.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace ember::data::testing {

// A fresh folder under the system temp dir, removed with everything in it when this goes away.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("ember-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// An IDX3 image file whose header says [count, rows, cols] followed by `data_bytes` bytes
// (pixel i is i % 251), so a length that disagrees with the header is easy to make.
inline std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols, size_t data_bytes) {
  std::string out = be32(0x803) + be32(count) + be32(rows) + be32(cols);
  for (size_t i = 0; i < data_bytes; ++i) out += static_cast<char>(i % 251);
  return out;
}

// An IDX1 label file holding `labels` (one byte each).
inline std::string idx_labels(const std::string& labels) {
  return be32(0x801) + be32(static_cast<uint32_t>(labels.size())) + labels;
}

inline void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// The gzipped bytes of `bytes`, as write_gz writes them.
inline std::string gz_bytes(const std::string& bytes) {
  TempDir dir;
  write_gz(dir / "x.gz", bytes);
  std::ifstream in(dir / "x.gz", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace ember::data::testing
