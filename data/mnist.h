// The MNIST digits (or Fashion-MNIST: the same files), normalised, as a Dataset.
// defines: ember::data::MNIST, Split, Normalize
#pragma once

#include <string>

#include "data/dataset.h"

namespace ember::data {

enum class Split { Train, Test };

// x ↦ (x / 255 − mean) / std; the defaults are MNIST's training-set statistics.
struct Normalize {
  double mean = 0.1307;
  double std = 0.3081;
};

// Reads train-images-idx3-ubyte / train-labels-idx1-ubyte (or t10k-... for Test), each with or
// without .gz, from `root`. Throws ember::Error naming the path (and how to get the data) when a
// file is missing or corrupt, and naming both files when their counts differ.
class MNIST : public Dataset {
 public:
  MNIST(const std::string& root, Split split, Normalize normalize = {});

  int64_t size() const override { return labels_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;

  const Tensor& images() const { return images_; }  // float32 [N, 1, 28, 28], normalised
  const Tensor& labels() const { return labels_; }  // int64 [N], 0..9

 private:
  Tensor images_, labels_;
};

}  // namespace ember::data
