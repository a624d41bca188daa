#include "ember/data/dataset.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "ember/common/error.h"

namespace ember::data {

Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices) {
  EMBER_CHECK(source.dim() >= 1, "dataset: gather_rows needs a tensor with at least one dim, got ", source.sizes());
  EMBER_CHECK(source.device().is_cpu(), "dataset: gather_rows reads CPU tensors, got one on ", source.device(),
              "; keep dataset tensors on the CPU and move each batch with .to(device)");
  Tensor dense = source.contiguous();
  Shape shape = dense.sizes();
  const int64_t rows = shape[0];
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = empty(shape, {.dtype = dense.dtype()});
  const size_t row_bytes = rows == 0 ? 0 : dense.nbytes() / static_cast<size_t>(rows);
  const char* src = static_cast<const char*>(dense.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < indices.size(); ++i) {
    EMBER_CHECK(indices[i] >= 0 && indices[i] < rows, "dataset: index ", indices[i], " is out of range for ",
                rows, " examples");
    std::memcpy(dst + i * row_bytes, src + indices[i] * row_bytes, row_bytes);
  }
  return out;
}

Example Dataset::get_batch(const std::vector<int64_t>& indices) const {
  EMBER_CHECK(!indices.empty(), "dataset: get_batch needs at least one index");
  std::vector<Example> examples;
  for (int64_t i : indices) examples.push_back(get(i));
  auto stack = [&](auto member) {
    Shape shape = (examples[0].*member).sizes();
    for (size_t i = 1; i < examples.size(); ++i) {
      EMBER_CHECK((examples[i].*member).sizes() == shape, "dataset: get_batch cannot stack example ", indices[i],
                  " of shape ", (examples[i].*member).sizes(), " onto example ", indices[0], " of shape ", shape);
    }
    shape.insert(shape.begin(), static_cast<int64_t>(examples.size()));
    Tensor out = empty(shape, {.dtype = (examples[0].*member).dtype()});
    for (size_t i = 0; i < examples.size(); ++i) out.select(0, static_cast<int64_t>(i)).copy_(examples[i].*member);
    return out;
  };
  return {stack(&Example::input), stack(&Example::target)};
}

TensorDataset::TensorDataset(Tensor inputs, Tensor targets) : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  EMBER_CHECK(inputs_.dim() >= 1 && targets_.dim() >= 1 && inputs_.size(0) == targets_.size(0),
              "TensorDataset: inputs ", inputs_.sizes(), " and targets ", targets_.sizes(),
              " must have the same size along dim 0");
}

Example TensorDataset::get(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size(), "TensorDataset: index ", index, " is out of range for ", size(), " examples");
  return {inputs_.select(0, index), targets_.select(0, index)};
}

Example TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  return {gather_rows(inputs_, indices), gather_rows(targets_, indices)};
}

Subset::Subset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices)
    : base_(std::move(base)), indices_(std::move(indices)) {
  EMBER_CHECK(base_ != nullptr, "Subset: the base dataset is null");
  const int64_t n = base_->size();
  for (int64_t i : indices_) {
    EMBER_CHECK(i >= 0 && i < n, "Subset: index ", i, " is out of range for a dataset of ", n, " examples");
  }
}

std::shared_ptr<Subset> Subset::first(std::shared_ptr<const Dataset> base, int64_t count) {
  EMBER_CHECK(base != nullptr, "Subset: the base dataset is null");
  EMBER_CHECK(count >= 0, "Subset::first: count must be >= 0, got ", count);
  std::vector<int64_t> indices(static_cast<size_t>(std::min(count, base->size())));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return std::make_shared<Subset>(std::move(base), std::move(indices));
}

int64_t Subset::base_index(int64_t index) const {
  EMBER_CHECK(index >= 0 && index < size(), "Subset: index ", index, " is out of range for ", size(), " examples");
  return indices_[static_cast<size_t>(index)];
}

Example Subset::get(int64_t index) const { return base_->get(base_index(index)); }

Example Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) mapped.push_back(base_index(i));
  return base_->get_batch(mapped);
}

}  // namespace ember::data
