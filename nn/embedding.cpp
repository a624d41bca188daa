#include "ember/nn/embedding.h"

#include <utility>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"
#include "ember/nn/functional.h"

namespace ember::nn {
namespace {

// A fresh N(0, 1) table, once its sizes are checked.
Tensor random_table(int64_t num_embeddings, int64_t embedding_dim) {
  EMBER_CHECK(num_embeddings >= 1 && embedding_dim >= 1,
              "Embedding: num_embeddings and embedding_dim must be positive, got ", num_embeddings, " and ",
              embedding_dim);
  return randn({num_embeddings, embedding_dim});
}

}  // namespace

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingOptions& options)
    : Embedding(random_table(num_embeddings, embedding_dim), true, options) {
  if (padding_idx_) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx_).fill_(0.0);
  }
}

Embedding::Embedding(Tensor table, bool requires_grad, const EmbeddingOptions& options)
    : num_embeddings_(table.size(0)), embedding_dim_(table.size(1)) {
  if (options.padding_idx) {
    const int64_t p = *options.padding_idx;
    EMBER_CHECK(p >= -num_embeddings_ && p < num_embeddings_, "Embedding: padding_idx must be within [",
                -num_embeddings_, ", ", num_embeddings_, "), got ", p);
    padding_idx_ = p < 0 ? p + num_embeddings_ : p;
  }
  weight = register_parameter("weight", std::move(table), requires_grad);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, bool freeze, const EmbeddingOptions& options) {
  EMBER_CHECK(embeddings.defined() && embeddings.dim() == 2,
              "Embedding::from_pretrained: expected a 2-D tensor [num_embeddings, embedding_dim], got ",
              embeddings.defined() ? embeddings.sizes() : Shape{});
  return Embedding(embeddings.detach().clone(), !freeze, options);
}

Tensor Embedding::forward(const Tensor& input) {
  EMBER_CHECK(input.defined(), name(), ": input is an undefined tensor");
  return functional::embedding(input, weight, padding_idx_);
}

std::string Embedding::extra_repr() const {
  std::string repr = ember::detail::str(num_embeddings_, ", ", embedding_dim_);
  if (padding_idx_) repr += ember::detail::str(", padding_idx=", *padding_idx_);
  return repr;
}

}  // namespace ember::nn
