// The geometry and options of softmax and the classification losses, shared by their CPU
// (kernels/cpu/loss.h) and CUDA (kernels/cuda/loss.h) kernels.
// defines: ember::kernels::SoftmaxShape, ClassLossShape
#pragma once

#include <cstdint>

namespace ember::kernels {

// A contiguous tensor viewed as [outer, size, inner], softmax taken over the middle dimension:
// element (o, k, i) is at (o * size + k) * inner + i. inner == 1 is the contiguous-row case.
// log: log_softmax instead of softmax.
struct SoftmaxShape {
  int64_t outer = 1, size = 1, inner = 1;
  bool log = false;
  int64_t numel() const { return outer * size * inner; }
};

// Scores [outer, classes, inner] (contiguous; [N, C] is inner == 1, [N, C, d1, ...] has inner =
// d1 * ...), targets [outer, inner] (contiguous): one loss "row" per (o, i), rows() of them, row r
// being o = r / inner, i = r % inner. A row whose target is ignore_index contributes nothing; any
// other target must be in [0, classes) (checked by the caller; the kernels turn one out of range
// into NaN rather than reading out of bounds). label_smoothing in [0, 1] (cross-entropy only).
struct ClassLossShape {
  int64_t outer = 0, classes = 0, inner = 1;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  int64_t rows() const { return outer * inner; }
  int64_t numel() const { return outer * classes * inner; }
};

}  // namespace ember::kernels
