// Op cases at the tutorial network's shapes and at larger ones, for every target: SGEMM, conv2d
// forward / input gradient / weight gradient, max_pool2d, relu, linear, cross_entropy and the SGD
// update. A backward case runs its forward outside the timer and times backward() alone.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/bench_common.h"
#include "ember/nn/functional.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, k, r, padding;
  int64_t p() const { return h + 2 * padding - r + 1; }
  int64_t q() const { return w + 2 * padding - r + 1; }
  double flops() const { return 2.0 * n * k * p() * q() * c * r * r; }
  double bytes() const { return 4.0 * (n * c * h * w + k * c * r * r + n * k * p() * q()); }
};
const ConvCase kConvCases[] = {
    {"conv1", 64, 1, 28, 28, 10, 5, 0},   // the tutorial network's conv1 at batch 64
    {"conv2", 64, 10, 12, 12, 20, 5, 0},  // its conv2
    {"big", 64, 64, 56, 56, 64, 3, 1},    // a ResNet-style 3x3 layer
};

void register_sgemm(const Target& target) {
  for (int64_t n : {1024, 4096}) {
    if (quick() && !target.cuda && n > 1024) continue;
    add("sgemm/" + std::to_string(n), target, [n](benchmark::State& state, const Target& t) {
      Tensor a = randn({n, n}).to(t.device()), b = randn({n, n}).to(t.device());
      Timer timer(state, t);
      for (auto _ : state) {
        timer.start();
        Tensor c = matmul(a, b);
        timer.stop();
      }
      report(state, t, timer, 2.0 * n * n * n, 4.0 * 3 * n * n);
      if (!t.cuda) {
        // of_peak_flops divides by a peak taken once at start-up; on a shared machine a slow
        // spell during either skews it. Here the FMA loop and one product alternate, each pair
        // a ratio, and the median of the pairs is reported.
        std::vector<double> ratios;
        for (int pair = 0; pair < (quick() ? 3 : 9); ++pair) {
          const auto t0 = std::chrono::steady_clock::now();
          Tensor c = matmul(a, b);
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          ratios.push_back(2.0 * n * n * n / s * 1e-9 / cpu_peak_now(t.threads, s));
        }
        std::sort(ratios.begin(), ratios.end());
        state.counters["of_peak_paired"] = ratios[ratios.size() / 2];
      }
    })->Unit(benchmark::kMillisecond);
  }
}

void register_conv(const Target& target) {
  for (const ConvCase& c : kConvCases) {
    if (quick() && !target.cuda && c.flops() > 1e9) continue;
    for (int pass = 0; pass < 3; ++pass) {
      static const char* kPass[] = {"forward", "input_grad", "weight_grad"};
      add(std::string("conv2d/") + c.name + "/" + kPass[pass], target,
          [c, pass](benchmark::State& state, const Target& t) {
            Tensor x = randn({c.n, c.c, c.h, c.w}).to(t.device());
            Tensor w = randn({c.k, c.c, c.r, c.r}).to(t.device()), b = randn({c.k}).to(t.device());
            if (pass == 1) x.requires_grad_();
            if (pass == 2) {
              w.requires_grad_();
              b.requires_grad_();
            }
            Tensor dy = randn({c.n, c.k, c.p(), c.q()}).to(t.device());
            Timer timer(state, t);
            auto conv = [&] { return F::conv2d(x, w, b, {.padding = c.padding}); };
            if (pass == 0) time_forward(state, timer, conv);
            else time_backward(state, timer, conv, dy, {x, w, b});
            report(state, t, timer, c.flops(), c.bytes());
          })
          ->Unit(c.flops() > 1e9 ? benchmark::kMillisecond : benchmark::kMicrosecond);
    }
  }
}

void register_pool_relu(const Target& target) {
  const std::pair<const char*, Shape> pools[] = {{"pool1", {64, 10, 24, 24}}, {"pool2", {64, 20, 8, 8}}};
  for (const auto& [name, shape] : pools) {
    // forward: read x, write y and an int64 argmax; backward: read dy and argmax, write dx.
    const double n = elements(shape);
    add_forward_backward_cases(std::string("max_pool2d/") + name, target, shape,
                               [](const Tensor& x) { return F::max_pool2d(x, 2); }, n * 4 + n / 4 * 12,
                               n * 4 + n / 4 * 12);
  }
  const std::pair<const char*, Shape> relus[] = {{"act1", {64, 10, 12, 12}}, {"large", {64, 64, 56, 56}}};
  for (const auto& [name, shape] : relus) {
    const double n = elements(shape);
    add_forward_backward_cases(std::string("relu/") + name, target, shape, [](const Tensor& x) { return F::relu(x); },
                               8 * n, 12 * n);
  }
}

void register_linear_loss_sgd(const Target& target) {
  // The tutorial network's fc layer, forward and forward + backward (all three gradients).
  for (bool train : {false, true}) {
    add(std::string("linear/fc/") + (train ? "train" : "forward"), target,
        [train](benchmark::State& state, const Target& t) {
          const int64_t m = 64, n = 10, k = 320;
          Tensor x = randn({m, k}).to(t.device()), w = randn({n, k}).to(t.device());
          Tensor b = randn({n}).to(t.device()), dy = randn({m, n}).to(t.device());
          if (train) {
            x.requires_grad_();
            w.requires_grad_();
            b.requires_grad_();
          }
          Timer timer(state, t);
          for (auto _ : state) {
            timer.start();
            Tensor y = F::linear(x, w, b);
            if (train) y.backward(dy);
            timer.stop();
            if (train) {
              x.set_grad(Tensor());
              w.set_grad(Tensor());
              b.set_grad(Tensor());
            }
          }
          report(state, t, timer, (train ? 3 : 1) * 2.0 * m * n * k, 0);
        })
        ->Unit(benchmark::kMicrosecond);
  }
  add("cross_entropy/64x10/train", target, [](benchmark::State& state, const Target& t) {
    Tensor logits = randn({64, 10}).to(t.device()).requires_grad_();
    Tensor target_labels = div(arange(64.0, {.dtype = kFloat32}), 7.0).to(kInt64).to(t.device());
    Timer timer(state, t);
    for (auto _ : state) {
      timer.start();
      Tensor loss = F::cross_entropy(logits, target_labels);
      loss.backward();
      timer.stop();
      logits.set_grad(Tensor());
    }
    report(state, t, timer, 0, 0);
  })->Unit(benchmark::kMicrosecond);
  // SGD with momentum over the tutorial network's 21,840 parameters, and over 16 M parameters
  // (bandwidth-bound: reads param, grad, buffer; writes param, buffer = 20 bytes per float).
  const std::pair<const char*, int64_t> sgd_cases[] = {{"tutorial", 0}, {"16M", int64_t(16) << 20}};
  for (const auto& [name, numel] : sgd_cases) {
    add(std::string("sgd/") + name + "/step", target, [numel = numel](benchmark::State& state, const Target& t) {
      std::vector<Tensor> params;
      if (numel == 0) {
        for (Shape s : {Shape{10, 1, 5, 5}, Shape{10}, Shape{20, 10, 5, 5}, Shape{20}, Shape{10, 320}, Shape{10}}) {
          params.push_back(randn(s).to(t.device()).requires_grad_());
        }
      } else {
        params.push_back(randn({numel}).to(t.device()).requires_grad_());
      }
      double elements = 0;
      for (Tensor& p : params) {
        p.set_grad(randn(p.sizes()).to(t.device()));
        elements += double(p.numel());
      }
      optim::SGD opt(params, {.lr = 0.01, .momentum = 0.5});
      opt.step();  // creates the momentum buffers
      Timer timer(state, t);
      for (auto _ : state) {
        timer.start();
        opt.step();
        timer.stop();
      }
      report(state, t, timer, 0, 20.0 * elements);
    })->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

void register_op_cases() {
  for (const Target& target : targets()) {
    register_sgemm(target);
    register_conv(target);
    register_pool_relu(target);
    register_linear_loss_sgd(target);
    register_shape_cases(target);
    register_tensor_op_cases(target);
    register_activation_cases(target);
    register_loss_cases(target);
    register_batch_norm_cases(target);
    register_layer_norm_cases(target);
    register_index_cases(target);
    register_conv_transpose_cases(target);
    register_pool_cases(target);
    register_conv_groups_cases(target);
  }
}

}  // namespace ember::bench
