// Pooling cases: avg_pool2d 3x3 / stride 2 / padding 1 on a ResNet stem-sized activation
// ([32, 64, 56, 56]), and global average pooling (adaptive_avg_pool2d to 1) at the ResNet-8 head
// ([128, 64, 7, 7]) and a wider one ([32, 512, 7, 7]). A backward case runs its forward outside
// the timer and times backward() alone, as bench_ops.cpp does.
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {

void register_pool_cases(const Target& target) {
  namespace F = nn::functional;
  {
    const Shape shape{32, 64, 56, 56};
    const double n = 32.0 * 64 * 56 * 56, out = 32.0 * 64 * 28 * 28;
    // forward: read x, write y; backward: read dy, write dx.
    add_forward_backward_cases("avg_pool2d/3x3s2", target, shape,
                               [](const Tensor& x) { return F::avg_pool2d(x, 3, {.stride = 2, .padding = 1}); },
                               4 * (n + out), 4 * (n + out));
  }
  const std::pair<const char*, Shape> heads[] = {{"global", {128, 64, 7, 7}}, {"global_large", {32, 512, 7, 7}}};
  for (const auto& [name, shape] : heads) {
    const double n = elements(shape), out = double(shape[0] * shape[1]);
    add_forward_backward_cases(std::string("adaptive_avg_pool2d/") + name, target, shape,
                               [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 1); }, 4 * (n + out),
                               4 * (n + out));
  }
}

}  // namespace ember::bench
