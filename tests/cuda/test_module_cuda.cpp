// nn::Module::to(cuda) and the SGD state that follows its parameters onto the GPU.
#include <catch2/catch.hpp>

#include <vector>

#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/linear.h"
#include "ember/optim/sgd.h"

using ember::Tensor;

TEST_CASE("Module::to(cuda) keeps each parameter's handle and moves its gradient") {
  ember::nn::Linear fc(4, 3);
  Tensor handle = fc.weight;
  ember::sum(fc(ember::randn({2, 4}))).backward();
  Tensor cpu_weight = fc.weight.detach().clone();
  fc.to(ember::Device::cuda(0));
  CHECK(handle.is_same(fc.parameters()[0]));
  CHECK(handle.device() == ember::Device::cuda(0));
  CHECK(handle.grad().device() == ember::Device::cuda(0));
  CHECK(ember::allclose(handle.detach().cpu(), cpu_weight, 0, 0));
  fc.to(ember::Device::cpu());
  CHECK(handle.device().is_cpu());
}

TEST_CASE("SGD's momentum buffer follows a parameter moved to CUDA, and the CUDA step equals the CPU step") {
  ember::nn::Linear fc(4, 3);
  const ember::optim::SGDOptions options{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3};
  ember::optim::SGD opt(fc.parameters(), options);
  ember::sum(fc(ember::randn({2, 4}))).backward();
  opt.step();  // on the CPU: buffers created there
  REQUIRE(opt.momentum_buffer(0).device().is_cpu());
  // The CPU reference for the second step: the same parameters, gradients and optimizer state.
  std::vector<Tensor> reference;
  for (const Tensor& p : fc.parameters()) {
    Tensor r = p.detach().clone();
    r.requires_grad_(true);
    r.set_grad(p.grad().clone());
    reference.push_back(r);
  }
  ember::optim::SGD reference_opt(reference, options);
  reference_opt.load_state_dict(opt.state_dict());
  reference_opt.step();

  fc.to(ember::Device::cuda(0));
  opt.step();  // on CUDA, the momentum buffers moved there first
  const std::vector<Tensor> params = fc.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    INFO("parameter " << k);
    CHECK(params[k].device() == ember::Device::cuda(0));
    CHECK(opt.momentum_buffer(k).device() == ember::Device::cuda(0));
    CHECK(ember::allclose(params[k].detach().cpu(), reference[k].detach(), 1e-6, 1e-7));
    CHECK(ember::allclose(opt.momentum_buffer(k).cpu(), reference_opt.momentum_buffer(k), 1e-6, 1e-7));
  }
  opt.to(ember::Device::cpu());
  CHECK(opt.momentum_buffer(0).device().is_cpu());
}

TEST_CASE("SGD's state follows the model from cuda:0 to cuda:1 to the CPU, each step equal to the CPU's") {
  if (ember::cuda::device_count() < 2) {
    WARN("one GPU: the move to cuda:1 is not run");
    return;
  }
  ember::manual_seed(11);
  ember::nn::Linear fc(4, 3), reference(4, 3);
  reference.load_state_dict(fc.state_dict());
  const ember::optim::SGDOptions options{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  ember::optim::SGD opt(fc.parameters(), options), reference_opt(reference.parameters(), options);
  for (const ember::Device device : {ember::Device::cuda(0), ember::Device::cuda(1), ember::Device::cpu()}) {
    INFO("on " << device);
    const Tensor x = ember::randn({5, 4});
    fc.to(device);
    opt.zero_grad();
    ember::sum(fc(x.to(device))).backward();
    opt.step();
    reference_opt.zero_grad();
    ember::sum(reference(x)).backward();
    reference_opt.step();
    const std::vector<Tensor> params = fc.parameters(), expected = reference.parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      INFO("parameter " << k);
      CHECK(params[k].device() == device);
      CHECK(opt.momentum_buffer(k).device() == device);
      CHECK(ember::allclose(params[k].detach().cpu(), expected[k].detach(), 1e-6, 1e-7));
      CHECK(ember::allclose(opt.momentum_buffer(k).cpu(), reference_opt.momentum_buffer(k), 1e-6, 1e-7));
    }
  }
}
