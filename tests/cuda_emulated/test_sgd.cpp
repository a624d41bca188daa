// sgd_update_multi on the emulator against kernels/cpu/sgd.h's sgd_update_multi, tensor by tensor:
// more tensors than one launch carries (kSgdTensorsPerLaunch), sizes of 1, of a few elements and
// of more than kSgdChunk, every combination of momentum, dampening, weight decay and nesterov,
// first steps and later ones, and a tensor split across launches by kSgdBlocksPerLaunch.
#include "emulated_checks.h"

#include "ember/kernels/cpu/sgd.h"
#include "ember/kernels/cuda/sgd.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;

namespace {

// Uniform in [-1, 1) from a splitmix64 stream: cheap enough for the 4M-element tensor below.
template <class T>
std::vector<T> random_values(size_t n, std::mt19937_64& rng) {
  std::vector<T> v(n);
  uint64_t state = rng();
  for (auto& x : v) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    x = static_cast<T>(static_cast<double>(z >> 11) * 0x1p-52 - 1.0);
  }
  return v;
}

// One parameter on both sides: the emulated kernel's buffers and the CPU reference's.
template <class T>
struct Param {
  std::vector<T> param, grad, buffer;            // updated by the emulated kernel
  std::vector<T> want_param, want_buffer;        // updated by cpu::sgd_update_multi
  bool first_step = true;
};

template <class T>
std::vector<Param<T>> make_params(const std::vector<int64_t>& sizes, bool momentum, std::mt19937_64& rng,
                                  bool first_step = true) {
  std::vector<Param<T>> params(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    Param<T>& p = params[k];
    p.param = random_values<T>(sizes[k], rng);
    p.want_param = p.param;
    p.first_step = first_step;
    if (momentum) {
      // Before a first step buffers hold garbage (NaN): it overwrites them without reading.
      p.buffer = first_step ? std::vector<T>(sizes[k], std::numeric_limits<T>::quiet_NaN())
                            : random_values<T>(sizes[k], rng);
      p.want_buffer = p.buffer;
    }
  }
  return params;
}

// One optimizer step over every parameter: fresh gradients, then the multi-tensor update on the
// emulator and cpu::sgd_update_multi per tensor; `first_step` per tensor as given.
template <class T>
void step_and_check(std::vector<Param<T>>& params, const ember::kernels::SgdHyper& hyper, const std::string& what,
                    std::mt19937_64& rng) {
  std::vector<ember::kernels::SgdTensor<T>> tensors;
  for (Param<T>& p : params) {
    p.grad = random_values<T>(p.param.size(), rng);
    tensors.push_back({p.param.data(), p.grad.data(), hyper.momentum != 0 ? p.buffer.data() : nullptr,
                       static_cast<int64_t>(p.param.size()), p.first_step});
  }
  cuda::sgd_update_multi<T>(tensors.data(), tensors.size(), hyper, ember::test::default_stream());
  for (size_t k = 0; k < params.size(); ++k) {
    Param<T>& p = params[k];
    const ember::kernels::SgdTensor<T> want{p.want_param.data(), p.grad.data(),
                                            hyper.momentum != 0 ? p.want_buffer.data() : nullptr,
                                            static_cast<int64_t>(p.param.size()), p.first_step};
    cpu::sgd_update_multi<T>(&want, 1, hyper);
    const std::string which = what + ", tensor " + std::to_string(k) + " of " + std::to_string(params.size()) +
                              " (" + std::to_string(p.param.size()) + " elements, first step " +
                              std::to_string(p.first_step) + ")";
    CHECK(matches(p.param, p.want_param, which + ", param"));
    if (hyper.momentum != 0) CHECK(matches(p.buffer, p.want_buffer, which + ", momentum buffer"));
  }
}

std::string describe(const ember::kernels::SgdHyper& h) {
  return "lr " + std::to_string(h.lr) + " momentum " + std::to_string(h.momentum) + " dampening " +
         std::to_string(h.dampening) + " weight decay " + std::to_string(h.weight_decay) + " nesterov " +
         std::to_string(h.nesterov);
}

// 61 tensors (two launches by count): mostly small, some of one element, some longer than one
// kSgdChunk block (the longest spans three), ~100k elements in all.
std::vector<int64_t> assorted_sizes() {
  std::vector<int64_t> sizes;
  for (int k = 0; k < 61; ++k) {
    if (k % 10 == 3) sizes.push_back(1);
    else if (k == 7) sizes.push_back(cuda::kSgdChunk + 1);
    else if (k == 30) sizes.push_back(2 * cuda::kSgdChunk + 513);
    else if (k == 50) sizes.push_back(cuda::kSgdChunk);
    else sizes.push_back(5 + (k * 37) % 700);
  }
  return sizes;
}

template <class T>
void check_every_rule() {
  std::mt19937_64 rng(sizeof(T));
  const std::vector<int64_t> sizes = assorted_sizes();
  REQUIRE(sizes.size() > static_cast<size_t>(cuda::kSgdTensorsPerLaunch));
  for (double momentum : {0.0, 0.9}) {
    for (double dampening : {0.0, 0.25}) {
      for (double weight_decay : {0.0, 1e-2}) {
        for (bool nesterov : {false, true}) {
          if (momentum == 0.0 && (dampening != 0.0 || nesterov)) continue;  // both act through momentum only
          const ember::kernels::SgdHyper hyper{0.05, momentum, dampening, weight_decay, nesterov};
          std::vector<Param<T>> params = make_params<T>(sizes, momentum != 0.0, rng);
          // Step 1: every buffer initialised; step 2: most buffers read, every third one
          // initialised again (as for a parameter added to the optimizer late) in the same launch.
          step_and_check(params, hyper, describe(hyper) + ", step 1", rng);
          for (size_t k = 0; k < params.size(); ++k) params[k].first_step = k % 3 == 0;
          step_and_check(params, hyper, describe(hyper) + ", step 2", rng);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("emulated sgd_update_multi matches the CPU step for every rule over several launches",
          "[cuda-emulated][sgd]") {
  SECTION("float") { check_every_rule<float>(); }
  SECTION("double") { check_every_rule<double>(); }
}

// kSgdBlocksPerLaunch blocks fill up at the last chunk of one tensor: that chunk goes to the next
// launch in a new slot, at the right offset. One later step (buffers read), to keep it short.
TEST_CASE("emulated sgd_update_multi splits a tensor across launches when the block table is full",
          "[cuda-emulated][sgd]") {
  std::mt19937_64 rng(1);
  const std::vector<int64_t> sizes = {3, (cuda::kSgdBlocksPerLaunch - 1) * cuda::kSgdChunk + 7, 5, 1};
  const ember::kernels::SgdHyper hyper{0.1, 0.5, 0.1, 1e-3, true};
  std::vector<Param<float>> params = make_params<float>(sizes, true, rng, /*first_step=*/false);
  step_and_check(params, hyper, "block table full", rng);
}
