// The IDX files MNIST is distributed in: gzipped or raw, validated before use.
// defines: ember::data::read_idx_images, read_idx_labels
#pragma once

#include <string>

#include "core/tensor.h"

namespace ember::data {

// uint8 [count, rows, cols] from an IDX3 file (magic 0x00000803). Throws ember::Error naming the
// file when it cannot be opened, has the wrong magic, or is truncated or too long.
Tensor read_idx_images(const std::string& path);
// int64 [count] from an IDX1 file (magic 0x00000801), with the same checks.
Tensor read_idx_labels(const std::string& path);

}  // namespace ember::data
