// The optimizers' multi-tensor kernels (kernels/cuda/optimizer_step.h) on the emulator against
// their CPU twins (kernels/cpu/optimizer_step.h), tensor by tensor: more tensors than one launch
// carries (kOptimizerTensorsPerLaunch), sizes of 1, of a few elements and of more than
// kOptimizerChunk, every option that changes the arithmetic of SGD, Adam/AdamW, RMSprop and
// Adagrad, per-tensor coefficients that differ within a launch, first steps and later ones, and
// a tensor split across launches by kOptimizerBlocksPerLaunch.
#include "emulated_checks.h"

#include <array>
#include <functional>

#include "ember/kernels/cpu/optimizer_step.h"
#include "ember/kernels/cuda/optimizer_step.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::kernels::OptimizerTensor;
using ember::test::matches;

namespace {

// Uniform in [lo, hi) from a splitmix64 stream: cheap enough for the 4M-element tensor below.
template <class T>
std::vector<T> random_values(size_t n, std::mt19937_64& rng, double lo = -1, double hi = 1) {
  std::vector<T> v(n);
  uint64_t state = rng();
  for (auto& x : v) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x = static_cast<T>(lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1p-53);
  }
  return v;
}

// What one rule needs from the test: which state slots it uses, the range each slot's values
// start in (squares must be >= 0), and its two kernels.
template <class T, class Rule>
struct RuleCase {
  std::string what;
  Rule rule;
  std::array<bool, 3> uses;
  std::array<std::pair<double, double>, 3> start;
  void (*cpu_step)(const OptimizerTensor<T>*, size_t, const Rule&);
  void (*cuda_step)(const OptimizerTensor<T>*, size_t, const Rule&, ember::kernels::Stream);
};

// One parameter on both sides: the emulated kernel's buffers and the CPU reference's.
template <class T>
struct Param {
  std::vector<T> param, grad, want_param;
  std::array<std::vector<T>, 3> state, want_state;
  T coefficient[2];
  bool first_step = true;
};

template <class T, class Rule>
std::vector<Param<T>> make_params(const RuleCase<T, Rule>& c, const std::vector<int64_t>& sizes, std::mt19937_64& rng,
                                  bool first_step) {
  std::vector<Param<T>> params(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    Param<T>& p = params[k];
    p.param = random_values<T>(sizes[k], rng);
    p.want_param = p.param;
    p.first_step = first_step;
    // Per-tensor coefficients (Adam's step size and bias correction, Adagrad's decayed lr) differ
    // from tensor to tensor, as they do when parameters joined the optimizer at different steps.
    p.coefficient[0] = T(0.01 * (1 + static_cast<double>(k % 5)));
    p.coefficient[1] = T(0.5 + 0.1 * static_cast<double>(k % 4));
    for (int s = 0; s < 3; ++s) {
      if (!c.uses[s]) continue;
      p.state[s] = random_values<T>(sizes[k], rng, c.start[s].first, c.start[s].second);
      p.want_state[s] = p.state[s];
    }
  }
  return params;
}

template <class T>
OptimizerTensor<T> tensor_of(std::vector<T>& param, const std::vector<T>& grad, std::array<std::vector<T>, 3>& state,
                             const Param<T>& p) {
  OptimizerTensor<T> t;
  t.param = param.data();
  t.grad = grad.data();
  for (int s = 0; s < 3; ++s) t.state[s] = state[s].empty() ? nullptr : state[s].data();
  t.numel = static_cast<int64_t>(param.size());
  t.coefficient[0] = p.coefficient[0];
  t.coefficient[1] = p.coefficient[1];
  t.first_step = p.first_step;
  return t;
}

// One optimizer step over every parameter: fresh gradients, then the multi-tensor update on the
// emulator and the CPU kernel per tensor.
template <class T, class Rule>
void step_and_check(std::vector<Param<T>>& params, const RuleCase<T, Rule>& c, const std::string& what,
                    std::mt19937_64& rng) {
  std::vector<OptimizerTensor<T>> tensors;
  for (Param<T>& p : params) {
    p.grad = random_values<T>(p.param.size(), rng);
    tensors.push_back(tensor_of(p.param, p.grad, p.state, p));
  }
  c.cuda_step(tensors.data(), tensors.size(), c.rule, ember::test::default_stream());
  for (size_t k = 0; k < params.size(); ++k) {
    Param<T>& p = params[k];
    const OptimizerTensor<T> want = tensor_of(p.want_param, p.grad, p.want_state, p);
    c.cpu_step(&want, 1, c.rule);
    const std::string which = c.what + ", " + what + ", tensor " + std::to_string(k) + " of " +
                              std::to_string(params.size()) + " (" + std::to_string(p.param.size()) + " elements)";
    CHECK(matches(p.param, p.want_param, which + ", param"));
    for (int s = 0; s < 3; ++s) {
      if (c.uses[s]) CHECK(matches(p.state[s], p.want_state[s], which + ", state " + std::to_string(s)));
    }
  }
}

// 61 tensors (two launches by count): mostly small, some of one element, some longer than one
// kOptimizerChunk block (the longest spans three), ~100k elements in all.
std::vector<int64_t> assorted_sizes() {
  std::vector<int64_t> sizes;
  for (int k = 0; k < 61; ++k) {
    if (k % 10 == 3) sizes.push_back(1);
    else if (k == 7) sizes.push_back(cuda::kOptimizerChunk + 1);
    else if (k == 30) sizes.push_back(2 * cuda::kOptimizerChunk + 513);
    else if (k == 50) sizes.push_back(cuda::kOptimizerChunk);
    else sizes.push_back(5 + (k * 37) % 700);
  }
  return sizes;
}

template <class T, class Rule>
void check_case(const RuleCase<T, Rule>& c, std::mt19937_64& rng) {
  const std::vector<int64_t> sizes = assorted_sizes();
  REQUIRE(sizes.size() > static_cast<size_t>(cuda::kOptimizerTensorsPerLaunch));
  std::vector<Param<T>> params = make_params(c, sizes, rng, true);
  // Step 1: every first_step set; step 2: every third one again (a parameter added late).
  step_and_check(params, c, "step 1", rng);
  for (size_t k = 0; k < params.size(); ++k) params[k].first_step = k % 3 == 0;
  step_and_check(params, c, "step 2", rng);
}

constexpr std::pair<double, double> kSigned{-1, 1}, kSquare{0.5, 1.5}, kSmall{-0.1, 0.1}, kNone{0, 0};

template <class T>
void check_every_rule() {
  std::mt19937_64 rng(sizeof(T));
  for (bool momentum : {false, true}) {
    for (double dampening : {0.0, 0.25}) {
      for (double weight_decay : {0.0, 1e-2}) {
        for (bool nesterov : {false, true}) {
          if (!momentum && (dampening != 0.0 || nesterov)) continue;  // both act through momentum only
          const bool maximize = nesterov && weight_decay != 0;
          const ember::kernels::SgdRule<T> rule{T(0.05), T(0.9), T(1 - dampening), T(weight_decay), momentum,
                                                nesterov, maximize};
          check_case<T>(RuleCase<T, ember::kernels::SgdRule<T>>{
                            "SGD momentum " + std::to_string(momentum) + " dampening " + std::to_string(dampening) +
                                " wd " + std::to_string(weight_decay) + " nesterov " + std::to_string(nesterov),
                            rule, {momentum, false, false}, {kSigned, kNone, kNone}, &cpu::sgd_step<T>,
                            &cuda::sgd_step<T>},
                        rng);
        }
      }
    }
  }
  for (bool amsgrad : {false, true}) {
    for (bool decoupled : {false, true}) {
      for (double weight_decay : {0.0, 1e-2}) {
        const ember::kernels::AdamRule<T> rule{T(0.9), T(0.1), T(0.999), T(1 - 0.999), T(1e-8), T(weight_decay),
                                               T(1 - 1e-3 * weight_decay), amsgrad, decoupled, amsgrad && decoupled};
        check_case<T>(RuleCase<T, ember::kernels::AdamRule<T>>{
                          "Adam amsgrad " + std::to_string(amsgrad) + " decoupled " + std::to_string(decoupled) +
                              " wd " + std::to_string(weight_decay),
                          rule, {true, true, amsgrad}, {kSigned, kSquare, kSquare}, &cpu::adam_step<T>,
                          &cuda::adam_step<T>},
                      rng);
      }
    }
  }
  for (bool centered : {false, true}) {
    for (bool momentum : {false, true}) {
      for (double weight_decay : {0.0, 1e-2}) {
        const ember::kernels::RmspropRule<T> rule{T(0.01), T(0.99), T(1 - 0.99), T(1e-8), T(weight_decay), T(0.9),
                                                  centered, momentum, centered && momentum};
        check_case<T>(RuleCase<T, ember::kernels::RmspropRule<T>>{
                          "RMSprop centered " + std::to_string(centered) + " momentum " + std::to_string(momentum) +
                              " wd " + std::to_string(weight_decay),
                          rule, {true, momentum, centered}, {kSquare, kSigned, kSmall}, &cpu::rmsprop_step<T>,
                          &cuda::rmsprop_step<T>},
                      rng);
      }
    }
  }
  for (double weight_decay : {0.0, 0.1}) {
    const ember::kernels::AdagradRule<T> rule{T(1e-10), T(weight_decay), weight_decay != 0};
    check_case<T>(RuleCase<T, ember::kernels::AdagradRule<T>>{"Adagrad wd " + std::to_string(weight_decay), rule,
                                                              {true, false, false}, {kSquare, kNone, kNone},
                                                              &cpu::adagrad_step<T>, &cuda::adagrad_step<T>},
                  rng);
  }
}

}  // namespace

TEST_CASE("emulated optimizer kernels match their CPU twins for every rule over several launches",
          "[cuda-emulated][optimizer_step]") {
  SECTION("float") { check_every_rule<float>(); }
  SECTION("double") { check_every_rule<double>(); }
}

// kOptimizerBlocksPerLaunch blocks fill up at the last chunk of one tensor: that chunk goes to
// the next launch in a new slot, at the right offset. One later step of Adam, to keep it short.
TEST_CASE("emulated optimizer kernels split a tensor across launches when the block table is full",
          "[cuda-emulated][optimizer_step]") {
  std::mt19937_64 rng(1);
  const std::vector<int64_t> sizes = {3, (cuda::kOptimizerBlocksPerLaunch - 1) * cuda::kOptimizerChunk + 7, 5, 1};
  const ember::kernels::AdamRule<float> rule{0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.0f, 1.0f, true, false, false};
  const RuleCase<float, ember::kernels::AdamRule<float>> c{"Adam", rule, {true, true, true}, {kSigned, kSquare, kSquare},
                                                           &cpu::adam_step<float>, &cuda::adam_step<float>};
  std::vector<Param<float>> params = make_params(c, sizes, rng, false);
  step_and_check(params, c, "block table full", rng);
}
