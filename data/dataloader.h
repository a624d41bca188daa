// Batches from a Dataset: shuffled per epoch, optionally prepared on background threads.
// defines: ember::data::DataLoader, DataLoaderOptions, Batch
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>

#include "ember/data/dataset.h"
#include "ember/data/distributed_sampler.h"

namespace ember::data {

struct DataLoaderOptions {
  int64_t batch_size = 64;  // > 0
  bool shuffle = false;     // a fresh permutation each epoch, drawn from (seed, epoch)
  bool drop_last = false;   // drop a last batch smaller than batch_size
  int num_workers = 0;      // >= 0; 0: batches are made on the iterating thread
  uint64_t seed = 0;        // with the epoch, seeds the shuffle
  bool pin_memory = false;  // batches in page-locked memory, for fast copies to a GPU; a no-op without one
  DistributedSampler distributed = {};  // this rank's rows of every batch (data/distributed_sampler.h)
};

// One batch; works with structured bindings: for (auto [inputs, target] : loader).
struct Batch {
  Tensor inputs;
  Tensor target;
};

// Iterating a DataLoader runs one epoch: its batches, in order, from Dataset::get_batch over
// consecutive runs of batch_size indices (of 0..N-1, or of that epoch's permutation).
//
// With num_workers > 0, that many threads prepare batches ahead of the loop, at most
// 2 * num_workers beyond the one being consumed, and the loop still receives them in order, the
// same batches as with num_workers = 0. An exception thrown while making batch k (in a worker or
// not) is rethrown when the loop reaches batch k. Leaving the loop early (break, an exception)
// destroys its iterators, which stops and joins the workers; so does destroying the loader's last
// iterator after the loader itself. The dataset must be safe to read from several threads.
class DataLoader {
 public:
  // Throws ember::Error when `dataset` is null, batch_size <= 0 or num_workers < 0.
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});

  size_t size() const;  // batches per epoch
  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

  // The epoch the next iteration draws its permutation for (a fresh one each epoch, the same
  // one run to run). Each begin() uses the current epoch, then advances it by one.
  uint64_t epoch() const { return epoch_; }
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }

  class Epoch;
  // An input iterator over one epoch. Dereferencing fetches the batch once per position (waiting
  // for the workers if needed); batches left behind by skipping ahead are discarded.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using pointer = const Batch*;
    using reference = const Batch&;

    const Batch& operator*() const;
    const Batch* operator->() const { return &**this; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return position_ == other.position_; }
    bool operator!=(const Iterator& other) const { return position_ != other.position_; }

   private:
    friend class DataLoader;
    Iterator(std::shared_ptr<Epoch> epoch, size_t position) : epoch_(std::move(epoch)), position_(position) {}
    std::shared_ptr<Epoch> epoch_;  // null for end()
    size_t position_;
    mutable std::optional<Batch> batch_;
  };
  Iterator begin();  // starts a new epoch
  Iterator end();

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  uint64_t epoch_ = 0;
};

}  // namespace ember::data
