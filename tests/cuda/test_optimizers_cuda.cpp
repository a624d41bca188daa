// Adam, AdamW, RMSprop and Adagrad on CUDA: their state follows parameters moved to the GPU after
// the optimizer was built, and each CUDA step (the fused multi-tensor kernels) equals the CPU
// step from the same state. Runs on emulated GPUs in CI, on a real one when lent.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/nn/linear.h"
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/rmsprop.h"

using ember::Tensor;
namespace optim = ember::optim;

namespace {

// One CPU step, then the model moves to cuda:0 and steps again; a CPU twin loaded with the same
// state takes the same second step.
template <class Opt, class Options>
void check_follows_to_cuda(const Options& options, const std::vector<std::string>& buffers) {
  ember::manual_seed(4);
  ember::nn::Linear fc(40, 30);
  Opt opt(fc.parameters(), options);
  ember::sum(ember::pow(fc(ember::randn({8, 40})), 2.0)).backward();
  opt.step();
  std::vector<Tensor> reference;
  for (const Tensor& p : fc.parameters()) {
    Tensor r = p.detach().clone();
    r.requires_grad_(true);
    r.set_grad(p.grad().clone());
    reference.push_back(r);
  }
  Opt reference_opt(reference, options);
  reference_opt.load_state_dict(opt.state_dict());
  reference_opt.step();

  fc.to(ember::Device::cuda(0));
  opt.step();
  const std::vector<Tensor> params = fc.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    INFO("parameter " << k);
    CHECK(params[k].device() == ember::Device::cuda(0));
    CHECK(ember::allclose(params[k].detach().cpu(), reference[k].detach(), 1e-6, 1e-7));
    for (const std::string& name : buffers) {
      INFO(name);
      CHECK(opt.state(k, name).device() == ember::Device::cuda(0));
      CHECK(ember::allclose(opt.state(k, name).cpu(), reference_opt.state(k, name), 1e-6, 1e-7));
    }
    CHECK(opt.step_count(k) == 2);
  }
  opt.to(ember::Device::cpu());
  CHECK(opt.state(0, buffers[0]).device().is_cpu());
}

}  // namespace

TEST_CASE("every optimizer's state follows a model moved to CUDA, and its CUDA step equals the CPU step") {
  check_follows_to_cuda<optim::Adam>(optim::AdamOptions{.lr = 0.01, .weight_decay = 1e-2, .amsgrad = true},
                                     {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"});
  check_follows_to_cuda<optim::AdamW>(optim::AdamWOptions{.lr = 0.01}, {"exp_avg", "exp_avg_sq"});
  check_follows_to_cuda<optim::RMSprop>(optim::RMSpropOptions{.lr = 0.01, .momentum = 0.9, .centered = true},
                                        {"square_avg", "momentum_buffer", "grad_avg"});
  check_follows_to_cuda<optim::Adagrad>(optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.01}, {"sum"});
}
