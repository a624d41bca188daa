// ember-bench cases for index_select, gather and embedding (core/ops_index.cpp,
// nn/functional_embedding.cpp): a token lookup [32, 128] in a 10000 x 256 table (forward, and the
// backward that sums the rows back), half the channels of a ResNet feature map picked by
// index_select, and the target logit of each of 1024 rows gathered from 1000 classes.
#include <string>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {

void register_index_cases(const Target& target) {
  for (bool backward : {false, true}) {
    add(std::string("embedding/tokens/") + (backward ? "backward" : "forward"), target,
        [backward](benchmark::State& state, const Target& t) {
          guarded(state, [&] {
            Tensor table = randn({10000, 256}).to(t.device());
            if (backward) table.requires_grad_();
            Tensor ids = clamp(mul(rand({32, 128}), 10000.0).to(kInt64), 0.0, 9999.0).to(t.device());
            Tensor dy = randn({32, 128, 256}).to(t.device());
            Timer timer(state, t);
            auto forward = [&] { return nn::functional::embedding(ids, table); };
            if (backward) time_backward(state, timer, forward, dy, {table});
            else time_forward(state, timer, forward);
            // The selected rows read and written (backward: also the dense table zeroed).
            report(state, t, timer, 0, 8.0 * double(dy.numel()) + (backward ? 4.0 * double(table.numel()) : 0.0));
          });
        })
        ->Unit(benchmark::kMicrosecond);
  }
  add("index_select/resnet_channels/forward", target, [](benchmark::State& state, const Target& t) {
    guarded(state, [&] {
      Tensor x = randn({32, 64, 28, 28}).to(t.device());
      Tensor even = mul(arange(32.0), full({}, 2.0, {.dtype = kInt64})).to(t.device());
      Timer timer(state, t);
      time_forward(state, timer, [&] { return index_select(x, 1, even); });
      report(state, t, timer, 0, 4.0 * double(x.numel()));  // half read, half written
    });
  })->Unit(benchmark::kMicrosecond);
  add("gather/target_logits/forward", target, [](benchmark::State& state, const Target& t) {
    guarded(state, [&] {
      Tensor logits = randn({1024, 1000}).to(t.device());
      Tensor target_ids = clamp(mul(rand({1024, 1}), 1000.0).to(kInt64), 0.0, 999.0).to(t.device());
      Timer timer(state, t);
      time_forward(state, timer, [&] { return gather(logits, 1, target_ids); });
      report(state, t, timer, 0, 24.0 * 1024);
    });
  })->Unit(benchmark::kMicrosecond);
}

}  // namespace ember::bench
