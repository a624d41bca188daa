// The MNIST dataset: its error messages, and the real mnist-10k digits when they are present.
#include <catch2/catch.hpp>

#include <array>

#include "ember/core/ops.h"
#include "ember/data/mnist.h"
#include "idx_test_files.h"

using ember::Tensor;
namespace fs = std::filesystem;
namespace data = ember::data;
using namespace ember::data::testing;

namespace {

const fs::path kMnist = fs::path(EMBER_SOURCE_DIR) / ".." / "shared" / "data" / "mnist-10k";

std::array<int64_t, 10> class_counts(const Tensor& labels) {
  std::array<int64_t, 10> counts{};
  const int64_t* l = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    REQUIRE((l[i] >= 0 && l[i] < 10));
    ++counts[static_cast<size_t>(l[i])];
  }
  return counts;
}

}  // namespace

TEST_CASE("MNIST reports a missing folder and says how to get the data") {
  TempDir dir;
  std::string missing = dir / "mnist";
  REQUIRE_THROWS_WITH(data::MNIST(missing, data::Split::Train),
                      Catch::Contains("data folder " + missing + " does not exist") &&
                          Catch::Contains("should hold MNIST's IDX files train-images-idx3-ubyte and "
                                          "train-labels-idx1-ubyte") &&
                          Catch::Contains("yann.lecun.com/exdb/mnist") && !Catch::Contains("scripts/"));
}

TEST_CASE("MNIST reports a missing file by its path and says how to get the data") {
  TempDir dir;
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28, 2 * 784));
  REQUIRE_THROWS_WITH(data::MNIST(dir.path().string(), data::Split::Test),
                      Catch::Contains((dir / "t10k-labels-idx1-ubyte.gz") + " not found") &&
                          Catch::Contains("the folder " + dir.path().string() + " should hold MNIST's IDX files "
                                          "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte") &&
                          !Catch::Contains("scripts/"));
  REQUIRE_THROWS_WITH(data::MNIST(dir.path().string(), data::Split::Train),
                      Catch::Contains("train-images-idx3-ubyte.gz not found"));
}

TEST_CASE("MNIST names both files when the image and label counts differ") {
  TempDir dir;
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28, 2 * 784));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels("\x01\x02\x03"));
  REQUIRE_THROWS_WITH(data::MNIST(dir.path().string(), data::Split::Test),
                      Catch::Contains((dir / "t10k-images-idx3-ubyte.gz") + " holds 2 images but " +
                                      (dir / "t10k-labels-idx1-ubyte.gz") + " holds 3 labels"));
}

TEST_CASE("MNIST passes on a corrupt file's error") {
  TempDir dir;
  write_raw(dir / "train-images-idx3-ubyte", idx_images(2, 28, 28, 100));
  write_raw(dir / "train-labels-idx1-ubyte", idx_labels("\x01\x02"));
  REQUIRE_THROWS_WITH(data::MNIST(dir.path().string(), data::Split::Train),
                      Catch::Contains("train-images-idx3-ubyte is truncated"));
}

TEST_CASE("MNIST reads raw files, scales to [0, 1] and normalises") {
  TempDir dir;
  std::string pixels(2 * 784, '\0');
  pixels[0] = static_cast<char>(255);
  pixels[784 + 5] = static_cast<char>(51);
  write_raw(dir / "train-images-idx3-ubyte", be32(0x803) + be32(2) + be32(28) + be32(28) + pixels);
  write_raw(dir / "train-labels-idx1-ubyte", idx_labels("\x03\x08"));
  data::MNIST plain(dir.path().string(), data::Split::Train, {.mean = 0.0, .std = 1.0});
  REQUIRE(plain.images().sizes() == ember::Shape{2, 1, 28, 28});
  CHECK(plain.images().dtype() == ember::kFloat32);
  CHECK(plain.images().at<float>({0, 0, 0, 0}) == Approx(1.0));
  CHECK(plain.images().at<float>({1, 0, 0, 5}) == Approx(0.2));
  CHECK(plain.images().at<float>({1, 0, 0, 6}) == 0.0f);
  data::MNIST normalised(dir.path().string(), data::Split::Train);  // the defaults: 0.1307, 0.3081
  CHECK(normalised.images().at<float>({0, 0, 0, 0}) == Approx((1.0 - 0.1307) / 0.3081));
  CHECK(normalised.images().at<float>({0, 0, 0, 1}) == Approx(-0.1307 / 0.3081));
  CHECK(normalised.labels().at<int64_t>({1}) == 8);
  data::Example second = normalised.get(1);
  CHECK(second.input.sizes() == ember::Shape{1, 28, 28});
  CHECK(second.target.item<int64_t>() == 8);
  REQUIRE_THROWS_WITH(normalised.get(2), Catch::Contains("index 2 is out of range for 2 examples"));
  REQUIRE_THROWS_WITH(data::MNIST(dir.path().string(), data::Split::Train, {.std = 0.0}),
                      Catch::Contains("std must be positive"));
}

TEST_CASE("MNIST loads mnist-10k normalised, with its known class counts") {
  if (!fs::exists(kMnist)) {
    WARN("no mnist-10k at " << kMnist << ": skipping (scripts/fetch-mnist makes it)");
    return;
  }
  data::MNIST train(kMnist.string(), data::Split::Train), test(kMnist.string(), data::Split::Test);
  CHECK(train.size() == 8000);
  CHECK(test.size() == 2000);
  CHECK(train.images().sizes() == ember::Shape{8000, 1, 28, 28});
  CHECK(test.images().sizes() == ember::Shape{2000, 1, 28, 28});
  // From mnist-10k/README.md.
  CHECK(class_counts(train.labels()) == std::array<int64_t, 10>{793, 907, 805, 817, 774, 690, 797, 854, 753, 810});
  CHECK(class_counts(test.labels()) == std::array<int64_t, 10>{208, 220, 186, 215, 206, 173, 217, 216, 191, 168});
  CHECK(train.images().mean().item<float>() == Approx(0).margin(0.1));
  CHECK(test.images().mean().item<float>() == Approx(0).margin(0.1));
  // Pixels span exactly 0..255 before normalising.
  data::MNIST unit(kMnist.string(), data::Split::Test, {.mean = 0.0, .std = 1.0});
  const float* p = unit.images().data<float>();
  float lo = 1, hi = 0;
  for (int64_t i = 0; i < unit.images().numel(); ++i) lo = std::min(lo, p[i]), hi = std::max(hi, p[i]);
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);
  data::Example batch = train.get_batch({3, 1});
  CHECK(batch.input.sizes() == ember::Shape{2, 1, 28, 28});
  CHECK(ember::allclose(batch.input[0], train.images()[3], 0, 0));
  CHECK(ember::allclose(batch.input[1], train.images()[1], 0, 0));
  CHECK(batch.target.at<int64_t>({0}) == train.labels().at<int64_t>({3}));
}
