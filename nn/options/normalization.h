// The options of the normalisation layers (nn::BatchNorm1d, nn::BatchNorm2d, nn::LayerNorm).
// defines: ember::nn::BatchNormOptions, LayerNormOptions
#pragma once

#include <optional>

namespace ember::nn {

// PyTorch's keyword arguments, with its defaults: {.eps = 1e-5, .momentum = 0.1, .affine = true,
// .track_running_stats = true}. momentum = std::nullopt is PyTorch's momentum=None: the running
// statistics are then the cumulative average over the batches seen (factor 1 / num_batches_tracked).
struct BatchNormOptions {
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;
  bool affine = true;                // learnable weight (ones) and bias (zeros)
  bool track_running_stats = true;   // running_mean, running_var, num_batches_tracked buffers
};

// torch.nn.LayerNorm's keyword arguments, with its defaults (normalized_shape is the layer's
// first argument): {.eps = 1e-5, .elementwise_affine = true}.
struct LayerNormOptions {
  double eps = 1e-5;
  bool elementwise_affine = true;  // learnable weight (ones) and bias (zeros) of normalized_shape
};

}  // namespace ember::nn
