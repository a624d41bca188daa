// The IDX reader: raw and gzipped files, and every way a file can be wrong.
#include <catch2/catch.hpp>

#include "ember/core/ops.h"
#include "ember/data/idx.h"
#include "idx_test_files.h"

using ember::Tensor;
namespace data = ember::data;
using namespace ember::data::testing;

TEST_CASE("IDX images read the same raw, gzipped, and gzipped under any name") {
  TempDir dir;
  std::string images = idx_images(3, 2, 4, 24);
  write_raw(dir / "img", images);
  write_gz(dir / "img.gz", images);
  write_gz(dir / "img-no-suffix", images);  // gzip is recognised by its magic, not by the name
  Tensor raw = data::read_idx_images(dir / "img");
  CHECK(raw.sizes() == ember::Shape{3, 2, 4});
  CHECK(raw.dtype() == ember::kUInt8);
  CHECK(raw.device().is_cpu());
  CHECK(raw.at<uint8_t>({0, 0, 0}) == 0);
  CHECK(raw.at<uint8_t>({1, 0, 1}) == 9);
  CHECK(raw.at<uint8_t>({2, 1, 3}) == 23);
  CHECK(ember::allclose(raw, data::read_idx_images(dir / "img.gz"), 0, 0));
  CHECK(ember::allclose(raw, data::read_idx_images(dir / "img-no-suffix"), 0, 0));
}

TEST_CASE("IDX labels read as int64, raw or gzipped, bytes above 127 included") {
  TempDir dir;
  std::string labels = idx_labels(std::string("\x07\x00\x09\xff", 4));
  write_raw(dir / "lab", labels);
  write_gz(dir / "lab.gz", labels);
  for (const char* name : {"lab", "lab.gz"}) {
    Tensor t = data::read_idx_labels(dir / name);
    CHECK(t.dtype() == ember::kInt64);
    CHECK(t.sizes() == ember::Shape{4});
    CHECK(t.at<int64_t>({0}) == 7);
    CHECK(t.at<int64_t>({1}) == 0);
    CHECK(t.at<int64_t>({2}) == 9);
    CHECK(t.at<int64_t>({3}) == 255);
  }
}

TEST_CASE("IDX files with zero items read as empty tensors") {
  TempDir dir;
  write_raw(dir / "img", idx_images(0, 28, 28, 0));
  write_raw(dir / "lab", idx_labels(""));
  CHECK(data::read_idx_images(dir / "img").sizes() == ember::Shape{0, 28, 28});
  CHECK(data::read_idx_labels(dir / "lab").sizes() == ember::Shape{0});
}

TEST_CASE("a truncated IDX file is reported with the bytes expected and found") {
  TempDir dir;
  write_raw(dir / "short", idx_images(3, 2, 4, 10));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "short"),
                      Catch::Contains(dir / "short") &&
                          Catch::Contains("is truncated: expected 24 bytes of image data after the 16-byte header "
                                          "(dims [3, 2, 4]), found 10"));
  write_gz(dir / "short.gz", idx_images(3, 2, 4, 10));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "short.gz"),
                      Catch::Contains("short.gz is truncated: expected 24 bytes"));
  write_raw(dir / "labels", idx_labels("abcd").substr(0, 10));
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "labels"),
                      Catch::Contains("is truncated: expected 4 bytes of label data after the 8-byte header (dims [4]), "
                                      "found 2"));
}

TEST_CASE("a gzip file cut short (an interrupted download) is reported as truncated") {
  TempDir dir;
  std::string gz = gz_bytes(idx_images(200, 28, 28, 200 * 784));
  write_raw(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "cut.gz"),
                      Catch::Contains("cut.gz is truncated: expected 156800 bytes of image data") &&
                          Catch::Contains("(the gzip stream ends early)"));
  // Cut inside the trailer only: all the data is there, but the file is still damaged.
  write_raw(dir / "trailer.gz", gz.substr(0, gz.size() - 3));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "trailer.gz"),
                      Catch::Contains("trailer.gz is truncated: the gzip stream ends before its trailer"));
}

TEST_CASE("corrupt gzip data is reported as invalid gzip") {
  TempDir dir;
  std::string gz = gz_bytes(idx_images(50, 28, 28, 50 * 784));
  for (size_t i = 20; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  write_raw(dir / "bad.gz", gz);
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "bad.gz"), Catch::Contains("bad.gz is not a valid gzip file"));
}

TEST_CASE("an over-long IDX file is reported as too long") {
  TempDir dir;
  write_raw(dir / "long", idx_images(1, 2, 4, 9));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "long"),
                      Catch::Contains("long is too long: expected 8 bytes of image data after the 16-byte header "
                                      "(dims [1, 2, 4]), found 9"));
  write_gz(dir / "long.gz", idx_labels("abc") + "x");
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "long.gz"), Catch::Contains("is too long: expected 3 bytes"));
}

TEST_CASE("an IDX file with the wrong magic names the magic expected and found") {
  TempDir dir;
  write_raw(dir / "labels-as-images", idx_labels("ab"));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "labels-as-images"),
                      Catch::Contains("labels-as-images has magic 0x00000801, expected 0x00000803 (an IDX image file)"));
  write_gz(dir / "images-as-labels.gz", idx_images(1, 1, 1, 1));
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "images-as-labels.gz"),
                      Catch::Contains("has magic 0x00000803, expected 0x00000801 (an IDX label file)"));
  write_raw(dir / "text", "hello world, not an IDX file");
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "text"), Catch::Contains("has magic 0x68656c6c"));
}

TEST_CASE("an IDX file shorter than its header is truncated") {
  TempDir dir;
  write_raw(dir / "tiny", "ab");
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "tiny"),
                      Catch::Contains("tiny is truncated: expected an IDX label file (8-byte header), found 2 bytes"));
  write_raw(dir / "empty", "");
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "empty"), Catch::Contains("found 0 bytes"));
  write_raw(dir / "half-header", idx_images(1, 1, 1, 1).substr(0, 10));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "half-header"),
                      Catch::Contains("is truncated: expected a 16-byte IDX header, found 10 bytes"));
}

TEST_CASE("a header whose dims overflow cannot match the file length by accident") {
  TempDir dir;
  // 2^32-1 cubed wraps around 64 bits; the checked size computation refuses it before any read.
  write_raw(dir / "huge", be32(0x803) + be32(0xffffffff) + be32(0xffffffff) + be32(0xffffffff) + "abc");
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "huge"), Catch::Contains("too large to address"));
}

TEST_CASE("a missing or unreadable IDX file names the path and the reason") {
  TempDir dir;
  REQUIRE_THROWS_WITH(data::read_idx_labels(dir / "nothing"),
                      Catch::Contains("cannot open " + (dir / "nothing")) &&
                          Catch::Contains("No such file or directory"));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir.path().string()),
                      Catch::Contains("cannot read " + dir.path().string()) && Catch::Contains("Is a directory"));
}

// Issue 20, point 3: the header is checked before the body is decompressed, and decompression
// stops at the size the header implies.
TEST_CASE("a gzip bomb behind a wrong magic is rejected before its body is decompressed") {
  TempDir dir;
  // 64 MiB of zeros compress to about 64 KiB; the first 4 bytes are already a wrong magic.
  write_gz(dir / "bomb.gz", std::string(64 << 20, '\0'));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "bomb.gz"),
                      Catch::Contains("bomb.gz has magic 0x00000000, expected 0x00000803"));
}

TEST_CASE("decompression stops at the size the header implies") {
  TempDir dir;
  // A valid header for one 2x4 image, then 64 MiB more than that: the reader stops after one
  // byte past the 8 it expects instead of inflating the whole stream to count it.
  write_gz(dir / "long.gz", idx_images(1, 2, 4, 8) + std::string(64 << 20, '\0'));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "long.gz"),
                      Catch::Contains("long.gz is too long: expected 8 bytes of image data after the 16-byte header "
                                      "(dims [1, 2, 4]), found more (the decompressed data goes on past them)"));
}

TEST_CASE("IDX dims that overflow are rejected even when the count is zero") {
  TempDir dir;
  write_raw(dir / "zero", idx_images(0, 0xffffffff, 0xffffffff, 0));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "zero"),
                      Catch::Contains("zero") && Catch::Contains("shape [0, 4294967295, 4294967295]") &&
                          Catch::Contains("too large to address"));
  write_gz(dir / "zero.gz", idx_images(0, 0xffffffff, 0xffffffff, 0));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "zero.gz"), Catch::Contains("too large to address"));
}

TEST_CASE("a raw IDX file claiming gigabytes is reported as truncated without allocating them") {
  TempDir dir;
  write_raw(dir / "claims", idx_images(60000, 0xffff, 0xffff, 100));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "claims"),
                      Catch::Contains("is truncated: expected 257690173500000 bytes of image data") &&
                          Catch::Contains("found 100"));
  write_gz(dir / "claims.gz", idx_images(60000, 0xffff, 0xffff, 100));
  REQUIRE_THROWS_WITH(data::read_idx_images(dir / "claims.gz"),
                      Catch::Contains("is truncated: expected 257690173500000 bytes of image data") &&
                          Catch::Contains("found 100"));
}

// The reader's contract: ember::Error and nothing else, whatever the file holds.
TEST_CASE("IDX readers throw only ember::Error on arbitrary bytes") {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 4096; ++i) {
    bytes += static_cast<char>((i * 2654435761u) >> 13);
    if (i % 97 != 0) continue;
    write_raw(dir / "junk", bytes);
    write_raw(dir / "junk.gz", gz_bytes(bytes).substr(0, 10 + bytes.size() / 2));
    for (const char* name : {"junk", "junk.gz"}) {
      try {
        data::read_idx_images(dir / name);
      } catch (const ember::Error&) {
      }
      try {
        data::read_idx_labels(dir / name);
      } catch (const ember::Error&) {
      }
    }
  }
}

TEST_CASE("gzip members joined with cat read as one IDX file; bytes after the last are ignored") {
  TempDir dir;
  const std::string images = idx_images(2, 2, 4, 16);
  write_raw(dir / "plain", images);
  write_raw(dir / "joined.gz", gz_bytes(images.substr(0, 20)) + gz_bytes(images.substr(20)));
  CHECK(ember::allclose(data::read_idx_images(dir / "joined.gz"), data::read_idx_images(dir / "plain"), 0, 0));
  write_raw(dir / "padded.gz", gz_bytes(images) + std::string(8, '\0'));  // tape-style zero padding
  CHECK(data::read_idx_images(dir / "padded.gz").sizes() == ember::Shape{2, 2, 4});
}
