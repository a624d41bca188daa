// CPU-vs-CUDA parity of the network ops (relu, max_pool2d, log_softmax, nll_loss, cross_entropy,
// mse_loss; relu and max_pool2d on both backends), dropout's and dropout2d's masks bit for bit, and SGD steps.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/backend.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/cuda/stream.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/kernels/cpu/dropout.h"
#include "ember/kernels/cuda/dropout.h"
#include "ember/nn/functional.h"
#include "ember/optim/sgd.h"
#include "parity.h"

using ember::Shape;
using ember::Tensor;
using parity::ParityCase;
using parity::dtype_suffix;
using parity::random_input;
using parity::tolerance_for;
namespace F = ember::nn::functional;

namespace {

// `rows` labels in [0, classes), a fixed pseudo-random sequence per (rows, classes).
Tensor labels(int64_t rows, int64_t classes) {
  std::vector<int64_t> v(static_cast<size_t>(rows));
  uint64_t state = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(rows * 131 + classes);
  for (auto& label : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    label = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(classes));
  }
  return ember::tensor(v);
}

const char* reduction_name(F::Reduction r) {
  switch (r) {
    case F::Reduction::None: return "none";
    case F::Reduction::Mean: return "mean";
    case F::Reduction::Sum: return "sum";
    case F::Reduction::BatchMean: return "batchmean";
  }
  return "?";
}

}  // namespace

TEST_CASE("relu matches the CPU on CUDA, hand-written and cuDNN, forward and backward") {
  const std::vector<Shape> shapes{{64, 320}, {1}, {7}, {3, 5, 7}, {4099}, {2, 3, 4, 5}, {64, 10, 12, 12}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Shape& shape : shapes) {
      parity::check_parity({.name = "relu " + ember::shape_str(shape) + dtype_suffix(dtype),
                            .make_inputs = [=] { return std::vector<Tensor>{random_input(shape, dtype)}; },
                            .op = [](const std::vector<Tensor>& in) { return F::relu(in[0]); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype),
                            .vendor_too = true});
    }
    // A transposed (non-contiguous) input, and one starting at an odd offset (no float4 alignment).
    parity::check_parity({.name = "relu transposed [33,17]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({33, 17}, dtype)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::relu(in[0].t()); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype),
                          .vendor_too = true});
    parity::check_parity({.name = "relu unaligned [1001]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({1002}, dtype)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::relu(in[0].narrow(0, 1, 1001)); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype),
                          .vendor_too = true});
  }
}

TEST_CASE("max_pool2d matches the CPU on CUDA, hand-written and cuDNN, with overlap, padding and odd sizes") {
  struct PoolCase {
    Shape shape;
    F::ExpandingArray<2> kernel;
    F::MaxPool2dOptions options;
  };
  const std::vector<PoolCase> cases{
      {{64, 10, 24, 24}, 2, {}},                              // the tutorial's first pool
      {{64, 20, 8, 8}, 2, {}},                                // and its second
      {{2, 3, 7, 9}, 2, {}},                                  // floor mode drops a row and a column
      {{2, 3, 11, 13}, 3, {.stride = 2, .padding = 1}},       // overlap and padding
      {{1, 2, 6, 5}, 3, {.stride = 1}},                       // heavy overlap
      {{3, 2, 5, 5}, 2, {.padding = 1}},                      // padding, no overlap
      {{1, 1, 9, 10}, 4, {.stride = 3, .padding = 2}},        // padding = kernel / 2
      {{1, 1, 1, 1}, 1, {}},
      {{5, 1, 3, 17}, 3, {.stride = 1, .padding = 1}},
      {{2, 3, 9, 10}, {3, 2}, {.stride = {2, 1}, .padding = {1, 0}}},  // non-square everything
      {{1, 2, 7, 11}, {2, 4}, {.stride = {1, 3}, .padding = {1, 2}}},
  };
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const PoolCase& c : cases) {
      const F::ExpandingArray<2> strides = c.options.stride.value_or(c.kernel);  // one object: begin() and end() of it
      const ember::Shape stride(strides.begin(), strides.end());
      const std::string name = "max_pool2d " + ember::shape_str(c.shape) + " k" +
                               ember::shape_str({c.kernel[0], c.kernel[1]}) + " s" + ember::shape_str(stride) + " p" +
                               ember::shape_str({c.options.padding[0], c.options.padding[1]}) + dtype_suffix(dtype);
      parity::check_parity({.name = name,
                            .make_inputs = [=] { return std::vector<Tensor>{random_input(c.shape, dtype)}; },
                            .op = [c](const std::vector<Tensor>& in) { return F::max_pool2d(in[0], c.kernel, c.options); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype),
                            .vendor_too = true});
    }
    // A non-contiguous input (H and W swapped by a transpose).
    parity::check_parity({.name = "max_pool2d transposed [2,3,9,8] k3 s2" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({2, 3, 9, 8}, dtype)}; },
                          .op =
                              [](const std::vector<Tensor>& in) {
                                return F::max_pool2d(in[0].transpose(2, 3), 3, {.stride = 2});
                              },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype),
                          .vendor_too = true});
    // The tutorial's pool followed by relu, as Net::forward runs them.
    parity::check_parity({.name = "relu(max_pool2d) [64,10,24,24]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({64, 10, 24, 24}, dtype)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::relu(F::max_pool2d(in[0], 2)); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype),
                          .vendor_too = true});
  }
}

TEST_CASE("log_softmax matches the CPU on CUDA for short rows (a warp each) and long rows (a block each)") {
  const std::vector<Shape> shapes{{64, 10}, {1, 1}, {3, 31}, {5, 1023}, {4, 1024}, {3, 1025}, {2, 4000}, {200, 7}};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Shape& shape : shapes) {
      parity::check_parity({.name = "log_softmax " + ember::shape_str(shape) + dtype_suffix(dtype),
                            .make_inputs = [=] { return std::vector<Tensor>{random_input(shape, dtype)}; },
                            .op = [](const std::vector<Tensor>& in) { return F::log_softmax(in[0], 1); },
                            .differentiable = {0},
                            .tolerance = tolerance_for(dtype)});
    }
    parity::check_parity({.name = "log_softmax transposed [17,33]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({33, 17}, dtype)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::log_softmax(in[0].t(), -1); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
    // Large logits: only a max-subtracting kernel stays finite.
    parity::check_parity({.name = "log_softmax large logits [8,50]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{ember::mul(random_input({8, 50}, dtype), 500.0)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::log_softmax(in[0], 1); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
  }
}

TEST_CASE("nll_loss and cross_entropy match the CPU on CUDA for every reduction") {
  const std::vector<Shape> shapes{{64, 10}, {1, 1}, {7, 3}, {9, 1024}, {13, 1500}, {300, 5}};
  const F::Reduction reductions[] = {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Shape& shape : shapes) {
      for (F::Reduction r : reductions) {
        const std::string suffix = " " + ember::shape_str(shape) + " " + reduction_name(r) + dtype_suffix(dtype);
        auto make = [=] { return std::vector<Tensor>{random_input(shape, dtype), labels(shape[0], shape[1])}; };
        parity::check_parity({.name = "cross_entropy" + suffix,
                              .make_inputs = make,
                              .op = [r](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], in[1], r); },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
        parity::check_parity({.name = "nll_loss" + suffix,
                              .make_inputs = make,
                              .op = [r](const std::vector<Tensor>& in) { return F::nll_loss(in[0], in[1], r); },
                              .differentiable = {0},
                              .tolerance = tolerance_for(dtype)});
        parity::check_parity(
            {.name = "nll_loss(log_softmax)" + suffix,
             .make_inputs = make,
             .op = [r](const std::vector<Tensor>& in) { return F::nll_loss(F::log_softmax(in[0], 1), in[1], r); },
             .differentiable = {0},
             .tolerance = tolerance_for(dtype)});
      }
    }
    parity::check_parity({.name = "cross_entropy transposed [10,64]" + dtype_suffix(dtype),
                          .make_inputs = [=] { return std::vector<Tensor>{random_input({10, 64}, dtype), labels(64, 10)}; },
                          .op = [](const std::vector<Tensor>& in) { return F::cross_entropy(in[0].t(), in[1]); },
                          .differentiable = {0},
                          .tolerance = tolerance_for(dtype)});
  }
}

TEST_CASE("a target out of range gives the CPU's error on CUDA") {
  Tensor logits = random_input({4, 3}).cuda();
  Tensor target = ember::tensor(std::vector<int64_t>{0, 2, 3, 1}).cuda();
  const char* expected = "target[2] = 3 is out of range for 3 classes (expected [0, 2])";
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, target), Catch::Contains("cross_entropy: ") && Catch::Contains(expected));
  REQUIRE_THROWS_WITH(F::nll_loss(logits, target), Catch::Contains("nll_loss: ") && Catch::Contains(expected));
  Tensor negative = ember::tensor(std::vector<int64_t>{-1, 0, 0, 0}).cuda();
  REQUIRE_THROWS_WITH(F::cross_entropy(logits, negative), Catch::Contains("target[0] = -1 is out of range"));
}

TEST_CASE("mse_loss matches the CPU on CUDA for every reduction, gradients of input and target") {
  const std::vector<Shape> shapes{{64, 10}, {1}, {7, 5, 3}, {5000}, {33, 65}};
  const F::Reduction reductions[] = {F::Reduction::Mean, F::Reduction::Sum, F::Reduction::None};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (const Shape& shape : shapes) {
      for (F::Reduction r : reductions) {
        parity::check_parity(
            {.name = "mse_loss " + ember::shape_str(shape) + " " + reduction_name(r) + dtype_suffix(dtype),
             .make_inputs = [=] { return std::vector<Tensor>{random_input(shape, dtype), random_input(shape, dtype)}; },
             .op = [r](const std::vector<Tensor>& in) { return F::mse_loss(in[0], in[1], r); },
             .differentiable = {0, 1},
             .tolerance = tolerance_for(dtype)});
      }
    }
  }
}

// The backward runs the kernels of the backend its forward ran: a forward under the hand-written
// GEMM keeps it for the backward even under Backend::Vendor (which on the emulated GPUs, having no
// cuBLAS, would throw), so the gradients are bit for bit those of an all-hand-written step.
TEST_CASE("linear's backward runs on the backend of its forward, whatever the backend is by then") {
  ember::manual_seed(21);
  const Tensor x0 = random_input({9, 33}).cuda(), w0 = random_input({5, 33}).cuda(), b0 = random_input({5}).cuda();
  auto gradients = [&](ember::Backend backward_backend) {
    Tensor x = x0.detach().requires_grad_(), w = w0.detach().requires_grad_(), b = b0.detach().requires_grad_();
    Tensor y;
    {
      ember::BackendGuard forward(ember::Backend::Handwritten);
      y = F::linear(x, w, b);
    }
    ember::BackendGuard backward(backward_backend);
    ember::sum(y).backward();
    return std::vector<Tensor>{x.grad().cpu(), w.grad().cpu(), b.grad().cpu()};
  };
  const auto want = gradients(ember::Backend::Handwritten);
  const auto got = gradients(ember::Backend::Vendor);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("gradient " << i);
    CHECK(ember::allclose(got[i], want[i], 0.0, 0.0));
  }
}

TEST_CASE("mse_loss on CUDA promotes mixed dtypes as on the CPU, and names a device mismatch") {
  for (F::Reduction r : {F::Reduction::Mean, F::Reduction::None}) {
    parity::check_parity({.name = std::string("mse_loss f32 input, f64 target ") + reduction_name(r),
                          .make_inputs = [] { return std::vector<Tensor>{random_input({6, 4}),
                                                                         random_input({6, 4}, ember::kFloat64)}; },
                          .op = [r](const std::vector<Tensor>& in) { return F::mse_loss(in[0], in[1], r); },
                          .differentiable = {0, 1},
                          .tolerance = tolerance_for(ember::kFloat64)});
  }
  Tensor x = random_input({3}).cuda(), t = random_input({3});
  REQUIRE_THROWS_WITH(F::mse_loss(x, t), Catch::Contains("mse_loss: input is on cuda:0 but target is on cpu"));
}

TEST_CASE("dropout on CUDA draws the CPU's mask bit for bit for the same seed and offset") {
  const std::vector<int64_t> sizes{1, 3, 4, 7, 64 * 320, 100003};
  const double probabilities[] = {0.1, 0.5, 0.9};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    for (double p : probabilities) {
      ember::manual_seed(1234);
      std::vector<Tensor> inputs, cpu_out, cpu_grad;
      for (int64_t n : sizes) inputs.push_back(random_input({n}, dtype));
      // Consecutive draws advance the offset by ceil(n / 4): odd sizes check the offsets too.
      ember::manual_seed(99);
      for (const Tensor& x : inputs) {
        Tensor leaf = x.detach().clone();
        leaf.requires_grad_(true);
        Tensor y = F::dropout(leaf, p);
        y.backward(ember::ones_like(y));
        cpu_out.push_back(y.detach());
        cpu_grad.push_back(leaf.grad());
      }
      const uint64_t cpu_offset = ember::default_generator().offset();
      ember::manual_seed(99);
      for (size_t k = 0; k < inputs.size(); ++k) {
        INFO("n = " << sizes[k] << ", p = " << p << dtype_suffix(dtype));
        Tensor leaf = inputs[k].cuda();
        leaf.requires_grad_(true);
        Tensor y = F::dropout(leaf, p);
        y.backward(ember::ones_like(y));
        REQUIRE(y.device() == ember::Device::cuda(0));
        // |x| >= 0.05, so y != 0 exactly where the mask keeps the element.
        CHECK(ember::allclose(ember::ne(y.detach().cpu(), 0.0), ember::ne(cpu_out[k], 0.0), 0, 0));
        CHECK(ember::allclose(y.detach().cpu(), cpu_out[k], 0, 0));
        CHECK(ember::allclose(leaf.grad().cpu(), cpu_grad[k], 0, 0));
      }
      CHECK(ember::default_generator().offset() == cpu_offset);
    }
  }
}

TEST_CASE("dropout2d on CUDA drops the CPU's channels bit for bit for the same seed") {
  for (ember::DType dtype : parity::kFloatingDTypes) {
    Tensor x = random_input({8, 16, 5, 3}, dtype);
    ember::manual_seed(7);
    Tensor cpu_leaf = x.detach().clone().requires_grad_(true);
    Tensor cpu_y = F::dropout2d(cpu_leaf, 0.4);
    cpu_y.backward(ember::ones_like(cpu_y));
    ember::manual_seed(7);
    Tensor leaf = x.cuda().requires_grad_(true);
    Tensor y = F::dropout2d(leaf, 0.4);
    y.backward(ember::ones_like(y));
    INFO("dropout2d" << dtype_suffix(dtype));
    CHECK(ember::allclose(y.detach().cpu(), cpu_y.detach(), 0, 0));
    CHECK(ember::allclose(leaf.grad().cpu(), cpu_leaf.grad(), 0, 0));
  }
}

TEST_CASE("kernels::cuda::dropout_forward equals the CPU kernel for any seed and offset, high bits included") {
  struct DrawCase {
    uint64_t seed, offset;
    int64_t n;
  };
  const DrawCase cases[] = {{0, 0, 1}, {7, 3, 4099}, {0xDEADBEEFCAFEF00Dull, (uint64_t{1} << 32) - 2, 10001},
                            {0xFFFFFFFFFFFFFFFFull, 0x123456789ABCull, 65537}};
  for (const DrawCase& c : cases) {
    INFO("seed " << c.seed << ", offset " << c.offset << ", n " << c.n);
    Tensor x = random_input({c.n});
    Tensor y_cpu = ember::empty({c.n}), mask_cpu = ember::empty({c.n}, {.dtype = ember::kUInt8});
    ember::kernels::cpu::dropout_forward<float>(x.data<float>(), y_cpu.data<float>(), mask_cpu.data<uint8_t>(), c.n,
                                                0.3, c.seed, c.offset);
    Tensor x_gpu = x.cuda();
    Tensor y_gpu = ember::empty({c.n}, {.device = ember::Device::cuda(0)});
    Tensor mask_gpu = ember::empty({c.n}, {.dtype = ember::kUInt8, .device = ember::Device::cuda(0)});
    ember::kernels::cuda::dropout_forward<float>(x_gpu.data<float>(), y_gpu.data<float>(), mask_gpu.data<uint8_t>(),
                                                 c.n, 0.3, c.seed, c.offset, ember::cuda::current_stream(0));
    ember::cuda::synchronize(0);
    Tensor mask_back = mask_gpu.cpu();
    int64_t differing = 0;
    for (int64_t i = 0; i < c.n; ++i) differing += mask_back.data<uint8_t>()[i] != mask_cpu.data<uint8_t>()[i];
    CHECK(differing == 0);
    CHECK(ember::allclose(y_gpu.cpu(), y_cpu, 0, 0));
  }
}

namespace {

// Parameters of many sizes: below a chunk, several chunks (16384 elements each), more chunks
// than one launch takes (256), and more tensors than one launch takes (48).
std::vector<Tensor> sgd_params(ember::DType dtype) {
  std::vector<Shape> shapes{{3}, {40000}, {7, 5}, {5000000}, {10, 320}, {10}};
  for (int k = 0; k < 60; ++k) shapes.push_back({11 + k});
  std::vector<Tensor> out;
  for (const Shape& s : shapes) out.push_back(random_input(s, dtype));
  return out;
}

}  // namespace

TEST_CASE("five SGD steps on CUDA equal five on the CPU: momentum, dampening, nesterov, weight decay") {
  using ember::optim::SGDOptions;
  const SGDOptions nesterov{.lr = 0.05, .momentum = 0.9, .dampening = 0, .weight_decay = 1e-2, .nesterov = true};
  const SGDOptions damped{.lr = 0.1, .momentum = 0.5, .dampening = 0.3, .weight_decay = 0};
  const SGDOptions plain{.lr = 0.2, .momentum = 0, .weight_decay = 0.05};
  for (ember::DType dtype : parity::kFloatingDTypes) {
    ember::manual_seed(5);
    const std::vector<Tensor> initial = sgd_params(dtype);
    const size_t count = initial.size();
    // Gradients for each step, drawn once; parameter 1 gets its first gradient only at step 2,
    // so one fused launch mixes first and later steps.
    std::vector<std::vector<Tensor>> grads(5);
    for (int step = 0; step < 5; ++step) {
      for (const Tensor& p : initial) grads[step].push_back(random_input(p.sizes(), dtype));
    }
    auto make = [&](ember::Device device) {
      std::vector<Tensor> params;
      for (const Tensor& p : initial) {
        Tensor t = p.detach().clone().to(device);
        t.requires_grad_(true);
        params.push_back(t);
      }
      return params;
    };
    std::vector<Tensor> cpu = make(ember::Device::cpu()), gpu = make(ember::Device::cuda(0));
    auto groups_of = [&](const std::vector<Tensor>& ps) {
      // Three groups with different rules over interleaved parameters.
      std::vector<ember::optim::SGDParamGroup> groups{{{}, nesterov}, {{}, damped}, {{}, plain}};
      for (size_t k = 0; k < ps.size(); ++k) groups[k % 3].params.push_back(ps[k]);
      return groups;
    };
    ember::optim::SGD cpu_opt(groups_of(cpu)), gpu_opt(groups_of(gpu));
    for (int step = 0; step < 5; ++step) {
      for (size_t k = 0; k < count; ++k) {
        if (k == 1 && step < 2) continue;
        cpu[k].set_grad(grads[step][k]);
        gpu[k].set_grad(grads[step][k].cuda());
      }
      cpu_opt.step();
      gpu_opt.step();
    }
    const std::vector<Tensor> cpu_order = cpu_opt.parameters(), gpu_order = gpu_opt.parameters();
    for (size_t k = 0; k < count; ++k) {
      INFO("parameter " << k << " of shape " << ember::shape_str(gpu_order[k].sizes()) << dtype_suffix(dtype));
      REQUIRE(gpu_order[k].device() == ember::Device::cuda(0));
      const double error = parity::relative_error(gpu_order[k], cpu_order[k]);
      INFO("relative error " << error);
      CHECK(error < 1e-6);
      Tensor cpu_buffer = cpu_opt.momentum_buffer(k), gpu_buffer = gpu_opt.momentum_buffer(k);
      REQUIRE(cpu_buffer.defined() == gpu_buffer.defined());
      if (gpu_buffer.defined()) {
        CHECK(gpu_buffer.device() == ember::Device::cuda(0));
        CHECK(parity::relative_error(gpu_buffer, cpu_buffer) < 1e-6);
      }
    }
  }
}
