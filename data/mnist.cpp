#include "ember/data/mnist.h"

#include <filesystem>

#include "ember/common/error.h"
#include "ember/data/idx.h"

namespace ember::data {

namespace {

// What a folder must hold for `prefix` ("train" or "t10k") and where those files come from, for
// the messages below. No script is named: an installed ember has none.
std::string expected_files(const std::string& root, const std::string& prefix) {
  return detail::str("; the folder ", root, " should hold MNIST's IDX files ", prefix, "-images-idx3-ubyte and ",
                     prefix, "-labels-idx1-ubyte, gzipped (.gz) or not, as published at "
                     "http://yann.lecun.com/exdb/mnist/ (mirror: https://ossci-datasets.s3.amazonaws.com/mnist/)");
}

std::string find_file(const std::string& root, const std::string& prefix, const std::string& stem) {
  for (const std::string& name : {stem + ".gz", stem}) {
    std::filesystem::path path = std::filesystem::path(root) / name;
    if (std::filesystem::exists(path)) return path.string();
  }
  throw Error(detail::str("mnist: ", (std::filesystem::path(root) / (stem + ".gz")).string(),
                          " not found (nor without .gz)", expected_files(root, prefix)));
}

}  // namespace

MNIST::MNIST(const std::string& root, Split split, Normalize normalize) {
  EMBER_CHECK(normalize.std > 0, "mnist: Normalize.std must be positive, got ", normalize.std);
  std::string prefix = split == Split::Train ? "train" : "t10k";
  EMBER_CHECK(std::filesystem::is_directory(root), "mnist: data folder ", root, " does not exist",
              expected_files(root, prefix));
  std::string images_path = find_file(root, prefix, prefix + "-images-idx3-ubyte");
  std::string labels_path = find_file(root, prefix, prefix + "-labels-idx1-ubyte");
  Tensor raw = read_idx_images(images_path);
  labels_ = read_idx_labels(labels_path);
  EMBER_CHECK(raw.size(0) == labels_.size(0), "mnist: ", images_path, " holds ", raw.size(0), " images but ",
              labels_path, " holds ", labels_.size(0), " labels");
  images_ = empty({raw.size(0), 1, raw.size(1), raw.size(2)});
  const uint8_t* src = raw.data<uint8_t>();
  float* dst = images_.data<float>();
  const double scale = 1.0 / (255.0 * normalize.std), shift = normalize.mean / normalize.std;
  for (int64_t i = 0; i < raw.numel(); ++i) dst[i] = static_cast<float>(src[i] * scale - shift);
}

Example MNIST::get(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size(), "mnist: index ", index, " is out of range for ", size(), " examples");
  return {images_.select(0, index), labels_.select(0, index)};
}

Example MNIST::get_batch(const std::vector<int64_t>& indices) const {
  return {gather_rows(images_, indices), gather_rows(labels_, indices)};
}

}  // namespace ember::data
