// A lookup table of embeddings.
// defines: ember::nn::Embedding, EmbeddingOptions
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ember/nn/module.h"

namespace ember::nn {

// torch.nn.Embedding's keyword arguments, with its defaults.
struct EmbeddingOptions {
  std::optional<int64_t> padding_idx;  // that row starts at zero and gets no gradient; negative counts from the end
};

// torch.nn.Embedding: parameter `weight` [num_embeddings, embedding_dim], initialised N(0, 1)
// with the padding_idx row zeroed; forward maps int64 indices [*] to [*, embedding_dim].
// Throws ember::Error for sizes below 1 or a padding_idx outside [-num_embeddings, num_embeddings).
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingOptions& options = {});
  // torch.nn.Embedding.from_pretrained: a copy of `embeddings` [num_embeddings, embedding_dim] as
  // the weight, frozen (no gradient) unless freeze is false; the padding row is kept as given.
  static Embedding from_pretrained(const Tensor& embeddings, bool freeze = true, const EmbeddingOptions& options = {});

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;

 private:
  // `table` [num_embeddings, embedding_dim] becomes the weight as is.
  Embedding(Tensor table, bool requires_grad, const EmbeddingOptions& options);

  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;  // normalised to [0, num_embeddings)
};

}  // namespace ember::nn
