// Batches from a Dataset: shuffled per epoch, optionally prepared on background threads.
// defines: ember::data::DataLoader, DataLoaderOptions, Batch
#pragma once

#include <cstdint>
#include <memory>

#include "data/dataset.h"

namespace ember::data {

struct DataLoaderOptions {
  int64_t batch_size = 64;
  bool shuffle = false;
  bool drop_last = false;   // drop a last batch smaller than batch_size
  int num_workers = 0;      // 0: batches are made on the iterating thread
  uint64_t seed = 0;        // with the epoch, seeds the shuffle
  bool pin_memory = false;  // batches in page-locked memory, for fast copies to a GPU (when one exists)
};

// One batch; works with structured bindings: for (auto [inputs, target] : loader).
struct Batch {
  Tensor inputs;
  Tensor target;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});

  size_t size() const;  // batches per epoch
  // The epoch the next iteration draws its permutation for (a fresh one each epoch, the same
  // one run to run). Each begin() uses the current epoch, then advances it.
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }

  class Epoch;
  // Iterates one epoch. Leaving the loop early stops and joins the workers.
  class Iterator {
   public:
    Batch operator*() const;
    Iterator& operator++();
    bool operator!=(const Iterator& other) const { return position_ != other.position_; }
    bool operator==(const Iterator& other) const { return position_ == other.position_; }

   private:
    friend class DataLoader;
    Iterator(std::shared_ptr<Epoch> epoch, size_t position) : epoch_(std::move(epoch)), position_(position) {}
    std::shared_ptr<Epoch> epoch_;
    size_t position_;
  };
  Iterator begin();
  Iterator end();

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  uint64_t epoch_ = 0;
  std::shared_ptr<Epoch> current_;
};

}  // namespace ember::data
