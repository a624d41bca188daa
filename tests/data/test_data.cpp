// IDX files, the MNIST dataset and the DataLoader.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/ops.h"
#include "data/dataloader.h"
#include "data/idx.h"
#include "data/mnist.h"

using ember::Tensor;
namespace fs = std::filesystem;
namespace data = ember::data;

namespace {

fs::path temp_dir() {
  fs::path dir = fs::temp_directory_path() / ("ember-data-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols, size_t data_bytes) {
  std::string out = be32(0x803) + be32(count) + be32(rows) + be32(cols);
  for (size_t i = 0; i < data_bytes; ++i) out += static_cast<char>(i % 251);
  return out;
}

void write_raw(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_gz(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

const fs::path kMnist = fs::path(EMBER_SOURCE_DIR) / ".." / "shared" / "data" / "mnist-10k";

}  // namespace

TEST_CASE("IDX images and labels read the same raw or gzipped") {
  fs::path dir = temp_dir();
  std::string images = idx_images(3, 2, 4, 24);
  write_raw(dir / "img", images);
  write_gz(dir / "img.gz", images);
  write_gz(dir / "lab.gz", be32(0x801) + be32(3) + std::string("\x07\x00\x09", 3));
  Tensor raw = data::read_idx_images((dir / "img").string());
  Tensor gz = data::read_idx_images((dir / "img.gz").string());
  CHECK(raw.sizes() == ember::Shape{3, 2, 4});
  CHECK(ember::allclose(raw, gz, 0, 0));
  CHECK(raw.at<uint8_t>({1, 0, 1}) == 9);
  Tensor labels = data::read_idx_labels((dir / "lab.gz").string());
  CHECK(labels.dtype() == ember::kInt64);
  CHECK(labels.at<int64_t>({2}) == 9);
}

TEST_CASE("bad IDX files fail with messages naming the file") {
  fs::path dir = temp_dir();
  write_raw(dir / "short", idx_images(3, 2, 4, 10));
  REQUIRE_THROWS_WITH(data::read_idx_images((dir / "short").string()),
                      Catch::Contains("short is truncated: expected 24 bytes of image data after the header, found 10"));
  write_raw(dir / "long", idx_images(1, 2, 4, 9));
  REQUIRE_THROWS_WITH(data::read_idx_images((dir / "long").string()), Catch::Contains("is too long"));
  write_raw(dir / "magic", be32(0x801) + be32(0));
  REQUIRE_THROWS_WITH(data::read_idx_images((dir / "magic").string()),
                      Catch::Contains("has magic 0x00000801, expected 0x00000803 (an IDX image file)"));
  REQUIRE_THROWS_WITH(data::read_idx_labels((dir / "nothing").string()), Catch::Contains("cannot open"));
  write_raw(dir / "tiny", "ab");
  REQUIRE_THROWS_WITH(data::read_idx_labels((dir / "tiny").string()), Catch::Contains("shorter than the 8-byte IDX header"));
}

TEST_CASE("MNIST reports a missing folder, a missing file and mismatched counts") {
  fs::path dir = temp_dir() / "mnist";
  REQUIRE_THROWS_WITH(data::MNIST(dir.string(), data::Split::Train), Catch::Contains("run scripts/fetch-mnist"));
  fs::create_directories(dir);
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28, 2 * 784));
  REQUIRE_THROWS_WITH(data::MNIST(dir.string(), data::Split::Test), Catch::Contains("t10k-labels-idx1-ubyte.gz not found"));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", be32(0x801) + be32(3) + std::string("\x01\x02\x03", 3));
  REQUIRE_THROWS_WITH(data::MNIST(dir.string(), data::Split::Test), Catch::Contains("holds 2 images but") && Catch::Contains("holds 3 labels"));
}

TEST_CASE("MNIST loads mnist-10k normalised, with its known class counts") {
  if (!fs::exists(kMnist)) {
    WARN("no mnist-10k at " << kMnist << ": skipping");
    return;
  }
  data::MNIST train(kMnist.string(), data::Split::Train), test(kMnist.string(), data::Split::Test);
  CHECK(train.size() == 8000);
  CHECK(test.size() == 2000);
  CHECK(train.images().sizes() == ember::Shape{8000, 1, 28, 28});
  CHECK(ember::sum(ember::eq(train.labels(), 0.0)).item<int64_t>() == 793);
  CHECK(ember::sum(ember::eq(train.labels(), 1.0)).item<int64_t>() == 907);
  CHECK(train.images().mean().item<float>() == Approx(0).margin(0.1));
  auto batch = train.get_batch({3, 1});
  CHECK(ember::allclose(batch.input[0], train.images()[3], 0, 0));
}

TEST_CASE("DataLoader batches, drops the last, shuffles per epoch reproducibly, and prefetches in order") {
  Tensor inputs = ember::arange(0.0, 10.0, 1.0, {.dtype = ember::kFloat32}).reshape({10, 1});
  auto dataset = std::make_shared<data::TensorDataset>(inputs, ember::arange(10));
  data::DataLoader plain(dataset, {.batch_size = 3});
  CHECK(plain.size() == 4);
  std::vector<int64_t> sizes;
  for (auto [x, y] : plain) sizes.push_back(x.size(0));
  CHECK(sizes == std::vector<int64_t>{3, 3, 3, 1});
  CHECK(data::DataLoader(dataset, {.batch_size = 3, .drop_last = true}).size() == 3);

  auto epoch_order = [&](data::DataLoader& loader) {
    std::vector<int64_t> order;
    for (auto [x, y] : loader)
      for (int64_t i = 0; i < y.size(0); ++i) order.push_back(y.at<int64_t>({i}));
    return order;
  };
  data::DataLoader shuffled(dataset, {.batch_size = 4, .shuffle = true, .seed = 5});
  auto first = epoch_order(shuffled), second = epoch_order(shuffled);
  CHECK(first != second);
  CHECK(std::set<int64_t>(first.begin(), first.end()).size() == 10);
  data::DataLoader again(dataset, {.batch_size = 4, .shuffle = true, .seed = 5});
  CHECK(epoch_order(again) == first);
  data::DataLoader workers(dataset, {.batch_size = 4, .shuffle = true, .num_workers = 2, .seed = 5});
  CHECK(epoch_order(workers) == first);
  for (auto [x, y] : workers) {
    (void)x;
    break;  // leaving early joins the workers without hanging
  }
  CHECK(epoch_order(workers).size() == 10);
}
