// What a DataLoader draws from: indexable examples, and batches of them.
// defines: ember::data::Example, Dataset, TensorDataset, Subset, gather_rows
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::data {

struct Example {
  Tensor input;
  Tensor target;
};

// An indexable collection of examples. get() and get_batch() are const and may be called from
// several DataLoader worker threads at once, so implementations must be safe to read concurrently.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Requires 0 <= index < size().
  virtual Example get(int64_t index) const = 0;
  // The examples at `indices` (at least one), stacked along a new dim 0 into new CPU tensors. The
  // default stacks get() results and throws when two examples differ in shape; datasets that hold
  // one big tensor override it with a direct gather.
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

// Rows of `inputs` and `targets` (dim 0) as examples. Throws ember::Error when either has no dims
// or their sizes along dim 0 differ. get() returns views; get_batch() needs CPU tensors.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor inputs, Tensor targets);
  int64_t size() const override { return inputs_.size(0); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;

 private:
  Tensor inputs_, targets_;
};

// The examples of `base` at `indices`, in that order, as torch.utils.data.Subset: example i is
// base's example indices[i]. Throws ember::Error for a null base or an index out of its range.
class Subset : public Dataset {
 public:
  Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);
  // The first `count` examples of `base` (all of them when it has fewer).
  static std::shared_ptr<Subset> first(std::shared_ptr<const Dataset> base, int64_t count);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  Example get_batch(const std::vector<int64_t>& indices) const override;

 private:
  int64_t base_index(int64_t index) const;
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

// Copies rows `indices` of the CPU tensor `source` (dim 0) into a new contiguous CPU tensor.
// Throws ember::Error on an index out of range or a tensor that is not on the CPU.
Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices);

}  // namespace ember::data
