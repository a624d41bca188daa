// embedding: the rows of weight that the indices name, through index_select's kernels; a
// padding_idx row gets no gradient.
#include "ember/core/ops.h"
#include "ember/nn/functional.h"
#include "ember/nn/functional_checks.h"

namespace ember::nn::functional {

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx) {
  detail::check_defined(input, "embedding", "input");
  detail::check_defined(weight, "embedding", "weight");
  EMBER_CHECK(input.dtype() == kInt64, "embedding: expected int64 indices, got ", dtype_name(input.dtype()),
              " input");
  EMBER_CHECK(weight.dim() == 2, "embedding: expected a 2-D weight [num_embeddings, embedding_dim], got ",
              weight.dim(), "-D weight ", weight.sizes());
  const int64_t rows = weight.size(0);
  int64_t skip = -1;
  if (padding_idx) {
    EMBER_CHECK(*padding_idx >= -rows && *padding_idx < rows, "embedding: padding_idx must be within [", -rows, ", ",
                rows, ") for ", rows, " embeddings, got ", *padding_idx);
    skip = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
  }
  Shape out = input.sizes();
  out.push_back(weight.size(1));
  return ember::detail::index_select_skipping(weight, 0, input.reshape({-1}), skip, "embedding").reshape(out);
}

}  // namespace ember::nn::functional
