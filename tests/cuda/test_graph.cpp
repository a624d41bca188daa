// CUDA Graphs: a captured training step of the tutorial network replays to the same weights as
// eager steps, without new cudaMalloc calls; a step that waits for the GPU fails to capture.
#include <catch2/catch.hpp>

#include "ember/core/autograd.h"
#include "ember/core/cuda/graph.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "examples/mnist/net.h"
#include "ember/nn/functional.h"
#include "ember/optim/sgd.h"

using ember::Tensor;
namespace F = ember::nn::functional;

namespace {

const ember::Device cuda0 = ember::Device::cuda(0);

struct Trainer {
  ember::examples::Net model;
  ember::optim::SGD opt{model.parameters(), {.lr = 0.05, .momentum = 0.9}};
  Tensor last_loss = ember::zeros({}, {.device = cuda0});

  explicit Trainer(const ember::examples::Net& init) {
    model.to(cuda0);
    auto source = init.parameters();
    auto params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      ember::NoGradGuard no_grad;
      params[i].copy_(source[i]);
    }
  }
  void step(const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    ember::NoGradGuard no_grad;
    last_loss.copy_(loss);
  }
};

}  // namespace

TEST_CASE("a captured training step replays to the weights of the same eager steps") {
  ember::manual_seed(3);
  ember::examples::Net init;
  std::vector<Tensor> xs, ys;
  for (int k = 0; k < 6; ++k) {
    xs.push_back(ember::randn({64, 1, 28, 28}).to(cuda0));
    ys.push_back(ember::mul(ember::rand({64}), 10.0).to(ember::kInt64).to(cuda0));  // classes 0..9
  }
  Trainer eager(init), graphed(init);
  for (int k = 0; k < 6; ++k) eager.step(xs[k], ys[k]);

  Tensor x = ember::empty({64, 1, 28, 28}, {.device = cuda0});
  Tensor y = ember::empty({64}, {.dtype = ember::kInt64, .device = cuda0});
  for (int k = 0; k < 2; ++k) {  // warm-up: gradients, momentum buffers and the allocator's cache
    x.copy_(xs[k]);
    y.copy_(ys[k]);
    graphed.step(x, y);
  }
  ember::cuda::Graph graph;
  graph.capture([&] { graphed.step(x, y); });  // records only: the weights are still after step 2
  REQUIRE(graph.captured());
  size_t mallocs = 0;
  for (int k = 2; k < 6; ++k) {
    x.copy_(xs[k]);
    y.copy_(ys[k]);
    graph.replay();
    if (k == 2) mallocs = ember::cuda::memory_stats(0).device_allocations;
  }
  ember::cuda::synchronize(0);
  CHECK(ember::cuda::memory_stats(0).device_allocations == mallocs);
  CHECK(graphed.last_loss.item<float>() == Approx(eager.last_loss.item<float>()).epsilon(1e-5));
  auto expected = eager.model.parameters(), actual = graphed.model.parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("parameter " << i);
    CHECK(ember::allclose(actual[i].detach().cpu(), expected[i].detach().cpu(), 1e-5, 1e-6));
  }
}

TEST_CASE("a step that waits for the GPU cannot be captured, and the error says why") {
  Tensor x = ember::randn({8, 8}).to(cuda0);
  ember::cuda::Graph graph;
  REQUIRE_THROWS_WITH(graph.capture([&] { (void)ember::sum(x).item<float>(); }),
                      Catch::Contains("cuda::Graph::capture: the step could not be captured") &&
                          Catch::Contains("must not wait for the GPU"));
  CHECK_FALSE(graph.captured());
  REQUIRE_THROWS_WITH(graph.replay(), Catch::Contains("nothing captured yet"));
  Tensor out = ember::zeros({8, 8}, {.device = cuda0});
  graph.capture([&] {
    ember::NoGradGuard no_grad;
    out.copy_(ember::mul(x, 2.0));
  });
  graph.replay();
  CHECK(ember::allclose(out.cpu(), ember::mul(x.cpu(), 2.0), 0, 0));
}
