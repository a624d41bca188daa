#include "ember/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/cuda/runtime.h"

namespace ember::data {

// One pass over the dataset. With workers, batch k is made by whichever worker takes it, at most
// `capacity` batches ahead of the consumer, and handed out strictly in order. Workers only touch
// `this` while it lives: the destructor stops and joins them.
class DataLoader::Epoch {
 public:
  Epoch(std::shared_ptr<Dataset> dataset, std::vector<std::vector<int64_t>> batches, int workers, bool pin_memory)
      : dataset_(std::move(dataset)), batches_(std::move(batches)), capacity_(2 * static_cast<size_t>(workers)),
        pin_memory_(pin_memory) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }
  Epoch(const Epoch&) = delete;
  Epoch& operator=(const Epoch&) = delete;

  ~Epoch() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_) t.join();
  }

  size_t size() const { return batches_.size(); }

  Batch get(size_t k) {
    if (threads_.empty()) return make(k);
    std::unique_lock lock(mutex_);
    EMBER_CHECK(k >= consumed_, "DataLoader: batch ", k, " was already taken from this epoch");
    if (k > consumed_) {  // the consumer skipped batches: drop them and let the workers move on
      consumed_ = k;
      ready_.erase(ready_.begin(), ready_.lower_bound(k));
      failed_.erase(failed_.begin(), failed_.lower_bound(k));
      changed_.notify_all();
    }
    changed_.wait(lock, [&] { return ready_.count(k) || failed_.count(k); });
    consumed_ = k + 1;
    changed_.notify_all();
    if (auto failure = failed_.find(k); failure != failed_.end()) {
      std::exception_ptr error = failure->second;
      failed_.erase(failure);
      std::rethrow_exception(error);
    }
    auto ready = ready_.find(k);
    Batch batch = std::move(ready->second);
    ready_.erase(ready);
    return batch;
  }

 private:
  Batch make(size_t k) const {
    Example example = dataset_->get_batch(batches_[k]);
    if (pin_memory_) return {example.input.pin_memory(), example.target.pin_memory()};
    return {std::move(example.input), std::move(example.target)};
  }

  void work() {
    while (true) {
      size_t k;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] {
          return stopping_ || std::max(next_, consumed_) >= batches_.size() ||
                 std::max(next_, consumed_) < consumed_ + capacity_;
        });
        k = std::max(next_, consumed_);
        if (stopping_ || k >= batches_.size()) return;
        next_ = k + 1;
      }
      std::optional<Batch> batch;
      std::exception_ptr failure;
      try {
        batch = make(k);
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        if (k >= consumed_) {  // else the consumer skipped it while it was being made
          if (batch) ready_.emplace(k, std::move(*batch));
          else failed_.emplace(k, failure);
        }
      }
      changed_.notify_all();
    }
  }

  std::shared_ptr<Dataset> dataset_;
  std::vector<std::vector<int64_t>> batches_;
  size_t capacity_;
  bool pin_memory_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<size_t, Batch> ready_;
  std::map<size_t, std::exception_ptr> failed_;
  size_t next_ = 0;      // the next batch a worker takes (or later, when the consumer skipped ahead)
  size_t consumed_ = 0;  // the batch the consumer waits for or takes next
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
  EMBER_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  EMBER_CHECK(options_.num_workers >= 0, "DataLoader: num_workers must be >= 0, got ", options_.num_workers);
  const DistributedSampler& d = options_.distributed;
  EMBER_CHECK(d.num_replicas >= 1 && d.rank >= 0 && d.rank < d.num_replicas, "DataLoader: distributed rank ", d.rank,
              " is out of range for ", d.num_replicas, " replicas");
  EMBER_CHECK(options_.batch_size >= d.num_replicas, "DataLoader: batch_size ", options_.batch_size,
              " is smaller than the ", d.num_replicas, " distributed replicas sharing each batch");
}

size_t DataLoader::size() const {
  int64_t n = dataset_->size(), b = options_.batch_size;
  int64_t batches = options_.drop_last ? n / b : (n + b - 1) / b;
  // A last batch too small to give every distributed replica a row is dropped.
  if (batches > 0 && n - (batches - 1) * b < options_.distributed.num_replicas) --batches;
  return static_cast<size_t>(batches);
}

DataLoader::Iterator DataLoader::begin() {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    std::mt19937_64 generator(options_.seed * 0x9E3779B97F4A7C15ULL + epoch_);
    // Fisher-Yates with our own index draws (mt19937_64's output is fixed by the standard, the
    // distributions are not), so the order is the same with every C++ library.
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[generator() % i]);
  }
  ++epoch_;
  const size_t batch_size = static_cast<size_t>(options_.batch_size);
  std::vector<std::vector<int64_t>> batches;
  for (size_t k = 0; k < size(); ++k) {
    size_t first = k * batch_size, last = std::min(order.size(), first + batch_size);
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                         order.begin() + static_cast<std::ptrdiff_t>(last));
  }
  if (options_.distributed.num_replicas > 1) batches = shard_batches(batches, options_.distributed);
  // Pinned memory only helps (and only exists) with a GPU; without one the option does nothing.
  const bool pin = options_.pin_memory && cuda::is_available();
  return Iterator(std::make_shared<Epoch>(dataset_, std::move(batches), options_.num_workers, pin), 0);
}

DataLoader::Iterator DataLoader::end() { return Iterator(nullptr, size()); }

const Batch& DataLoader::Iterator::operator*() const {
  EMBER_CHECK(epoch_ != nullptr && position_ < epoch_->size(), "DataLoader: dereferencing the end of an epoch");
  if (!batch_) batch_ = epoch_->get(position_);
  return *batch_;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++position_;
  batch_.reset();
  return *this;
}

}  // namespace ember::data
