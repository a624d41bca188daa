// add_forward_backward_cases (bench_common.h): the forward / backward case pair of a one-input op,
// shared by the activation, softmax, pooling and relu cases.
#include <string>
#include <utility>

#include "benchmarks/bench_common.h"

namespace ember::bench {

void add_forward_backward_cases(const std::string& name, const Target& target, const Shape& shape, UnaryOp op,
                                double bytes_forward, double bytes_backward) {
  for (bool backward : {false, true}) {
    add(name + (backward ? "/backward" : "/forward"), target,
        [=](benchmark::State& state, const Target& t) {
          Tensor x = randn(shape).to(t.device());
          Timer timer(state, t);
          if (!backward) {
            time_forward(state, timer, [&] { return op(x); });
            report(state, t, timer, 0, bytes_forward);
            return;
          }
          x.requires_grad_();
          Tensor dy;
          {
            NoGradGuard no_grad;  // only for dy's shape
            dy = randn(op(x).sizes()).to(t.device());
          }
          time_backward(state, timer, [&] { return op(x); }, dy, {x});
          report(state, t, timer, 0, bytes_backward);
        })
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace ember::bench
