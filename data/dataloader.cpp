#include "data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "common/error.h"
#include "core/cuda/runtime.h"

namespace ember::data {

// One pass over the dataset. With workers, batch k is made by whichever worker takes it, at most
// `capacity` batches ahead of the consumer, and handed out strictly in order.
class DataLoader::Epoch {
 public:
  Epoch(std::shared_ptr<Dataset> dataset, std::vector<std::vector<int64_t>> batches, int workers, bool pin_memory)
      : dataset_(std::move(dataset)), batches_(std::move(batches)), capacity_(2 * static_cast<size_t>(workers)),
        pin_memory_(pin_memory) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }

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
    changed_.wait(lock, [&] { return ready_.count(k) || failure_; });
    if (failure_) std::rethrow_exception(failure_);
    Batch batch = std::move(ready_[k]);
    ready_.erase(k);
    consumed_ = std::max(consumed_, k + 1);
    changed_.notify_all();
    return batch;
  }

 private:
  Batch make(size_t k) const {
    Example example = dataset_->get_batch(batches_[k]);
    if (pin_memory_) return {example.input.pin_memory(), example.target.pin_memory()};
    return {example.input, example.target};
  }

  void work() {
    while (true) {
      size_t k;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || next_ >= batches_.size() || next_ < consumed_ + capacity_; });
        if (stopping_ || next_ >= batches_.size()) return;
        k = next_++;
      }
      try {
        Batch batch = make(k);
        std::lock_guard lock(mutex_);
        ready_[k] = std::move(batch);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
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
  size_t next_ = 0, consumed_ = 0;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::vector<std::thread> threads_;
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: dataset is null");
  EMBER_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be positive, got ", options_.batch_size);
  EMBER_CHECK(options_.num_workers >= 0, "DataLoader: num_workers must be >= 0, got ", options_.num_workers);
}

size_t DataLoader::size() const {
  int64_t n = dataset_->size(), b = options_.batch_size;
  return static_cast<size_t>(options_.drop_last ? n / b : (n + b - 1) / b);
}

DataLoader::Iterator DataLoader::begin() {
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), 0);
  if (options_.shuffle) {
    std::mt19937_64 generator(options_.seed * 0x9E3779B97F4A7C15ULL + epoch_);
    // Fisher-Yates with our own index draws, so the order does not depend on the C++ library.
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[generator() % i]);
  }
  ++epoch_;
  std::vector<std::vector<int64_t>> batches;
  for (size_t k = 0; k < size(); ++k) {
    size_t begin = k * static_cast<size_t>(options_.batch_size);
    size_t end = std::min(order.size(), begin + static_cast<size_t>(options_.batch_size));
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  current_.reset();  // stop a previous, abandoned epoch's workers first
  // Pinned memory only helps (and only exists) with a GPU; without one the option does nothing.
  bool pin = options_.pin_memory && cuda::is_available();
  current_ = std::make_shared<Epoch>(dataset_, std::move(batches), options_.num_workers, pin);
  return Iterator(current_, 0);
}

DataLoader::Iterator DataLoader::end() { return Iterator(current_, current_ ? current_->size() : 0); }

Batch DataLoader::Iterator::operator*() const { return epoch_->get(position_); }

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++position_;
  return *this;
}

}  // namespace ember::data
