// What a DataLoader draws from: indexable examples, and batches of them.
// defines: ember::data::Example, Dataset, TensorDataset
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace ember::data {

struct Example {
  Tensor input;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Example get(int64_t index) const = 0;
  // The examples at `indices`, stacked along a new dim 0. The default stacks get(); datasets
  // that hold one big tensor override it with a direct gather.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

// Rows of `inputs` and `targets` (same size along dim 0) as examples.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor inputs, Tensor targets);
  int64_t size() const override { return inputs_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;

 private:
  Tensor inputs_, targets_;
};

// Copies rows `indices` of `source` (dim 0) into a new contiguous CPU tensor.
Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices);

}  // namespace ember::data
