// Batch normalisation layers.
// defines: ember::nn::BatchNorm1d, BatchNorm2d, LayerNorm
#pragma once

#include <cstdint>
#include <string>

#include "ember/nn/module.h"
#include "ember/nn/options/normalization.h"  // defines: BatchNormOptions, LayerNormOptions

namespace ember::nn {

// What BatchNorm1d and BatchNorm2d share (PyTorch's _BatchNorm): parameters `weight` (ones) and
// `bias` (zeros) when affine; buffers `running_mean` (zeros), `running_var` (ones) and
// `num_batches_tracked` (int64, 0-dim, 0) when track_running_stats, registered in that order
// under PyTorch's names, so a PyTorch state_dict loads as is. In train() mode forward normalises
// with the batch's statistics and updates the buffers in place (num_batches_tracked + 1); in
// eval() mode it uses the running statistics (the batch's when track_running_stats is false).
// Throws ember::Error for num_features < 1, eps <= 0 or a momentum outside [0, 1].
class BatchNormBase : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;                                         // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;       // undefined unless tracking

 protected:
  // `layer` names the layer in error messages (the dynamic type is not known yet here).
  BatchNormBase(const char* layer, int64_t num_features, const BatchNormOptions& options);
  // Throws ember::Error naming the layer when the input's rank is not one it takes.
  virtual void check_input_dim(const Tensor& input) const = 0;

  int64_t num_features_;
  BatchNormOptions options_;
};

// torch.nn.BatchNorm1d: input [N, C] or [N, C, L] with C = num_features.
class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormBase("BatchNorm1d", num_features, options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// torch.nn.BatchNorm2d: input [N, C, H, W] with C = num_features.
class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(int64_t num_features, const BatchNormOptions& options = {})
      : BatchNormBase("BatchNorm2d", num_features, options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// torch.nn.LayerNorm: normalises each input [*, normalized_shape] over its last dims (the
// statistics of each slice, in training and evaluation alike), then * weight + bias, parameters
// of shape normalized_shape (ones and zeros) when elementwise_affine.
// Throws ember::Error for an empty normalized_shape, a size below 1 or eps < 0.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, const LayerNormOptions& options = {});
  // LayerNorm(d): over the last dim, of size d (PyTorch's LayerNorm(d)).
  explicit LayerNorm(int64_t normalized_size, const LayerNormOptions& options = {})
      : LayerNorm(Shape{normalized_size}, options) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;  // undefined unless elementwise_affine

 private:
  Shape normalized_shape_;
  LayerNormOptions options_;
};

}  // namespace ember::nn
