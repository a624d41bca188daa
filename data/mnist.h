// The MNIST digits (or Fashion-MNIST: the same files), normalised, as a Dataset.
// defines: ember::data::MNIST, Split, Normalize
#pragma once

#include <string>

#include "ember/data/dataset.h"

namespace ember::data {

enum class Split { Train, Test };

// x ↦ (x / 255 − mean) / std; the defaults are MNIST's training-set statistics.
struct Normalize {
  double mean = 0.1307;
  double std = 0.3081;
};

// Reads train-images-idx3-ubyte / train-labels-idx1-ubyte (or t10k-... for Test), each with or
// without .gz (the .gz is preferred when both exist), from `root`, and keeps them on the CPU:
// images float32 [N, 1, rows, cols] as (x / 255 - mean) / std, labels int64 [N].
// Throws ember::Error naming the folder, the files it expected there and where MNIST's IDX files
// come from, when the folder or a file is missing; naming the file when it is corrupt (see data/idx.h); naming both files when
// their counts differ; and when normalize.std <= 0.
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
