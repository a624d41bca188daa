// dropout forward and backward on the emulator against the CPU (kernels/cpu/dropout.h): the mask
// and the output bit for bit for several seeds, counter offsets (one that carries into the
// counter's high word across a call) and drop probabilities (0 and 1 included), lengths that end
// inside a Philox block of 4, and the backward, in place too.
#include "emulated_checks.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ember/common/philox.h"
#include "ember/kernels/cpu/dropout.h"
#include "ember/kernels/cuda/dropout.h"

namespace cpu = ember::kernels::cpu;
namespace cuda = ember::kernels::cuda;
using ember::test::matches;
using ember::test::poisoned;

namespace {

struct Stream {
  uint64_t seed, offset;
};
// The offset 0xfffffffe: the calls below draw several blocks, so counters cross 2^32.
constexpr Stream kStreams[] = {{0, 0}, {42, 7}, {0xdeadbeefcafef00dull, 0xfffffffeull}, {1, 1ull << 62}};
constexpr int64_t kLengths[] = {1, 3, 4, 6, 1027, 2051};  // 2051: 513 Philox blocks, 3 thread blocks

std::string describe(int64_t n, double p, const Stream& st) {
  return "n " + std::to_string(n) + ", p " + std::to_string(p) + ", seed " + std::to_string(st.seed) + ", offset " +
         std::to_string(st.offset);
}

}  // namespace

TEMPLATE_TEST_CASE("emulated dropout_forward gives the CPU's mask and output bit for bit",
                   "[cuda-emulated][dropout]", float, double) {
  std::mt19937_64 rng(51);
  int64_t kept = 0, dropped = 0;
  for (const Stream& st : kStreams) {
    for (double p : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      for (int64_t n : kLengths) {
        const std::string what = describe(n, p, st);
        const auto x = ember::test::random_vector<TestType>(n, rng);
        std::vector<TestType> y = poisoned<TestType>(n), want_y = poisoned<TestType>(n);
        std::vector<uint8_t> mask = poisoned<uint8_t>(n), want_mask = poisoned<uint8_t>(n);
        cuda::dropout_forward<TestType>(x.data(), y.data(), mask.data(), n, p, st.seed, st.offset,
                                        ember::test::default_stream());
        cpu::dropout_forward<TestType>(x.data(), want_y.data(), want_mask.data(), n, p, st.seed, st.offset);
        CHECK(matches(mask, want_mask, "dropout mask, " + what));
        CHECK(matches(y, want_y, "dropout y, " + what, 0.0));
        for (uint8_t m : want_mask) (m ? kept : dropped) += 1;
        // The mask is philox::uniform(seed, offset, i) > p, element by element.
        bool by_element = true;
        for (int64_t i = 0; i < n && by_element; ++i) {
          by_element = mask[i] == (static_cast<double>(ember::philox::uniform(st.seed, st.offset, i)) > p ? 1 : 0);
        }
        CHECK(by_element);
      }
    }
  }
  // Both outcomes were exercised (p = 0 keeps all, p = 1 drops all, the others mix).
  CHECK(kept > 0);
  CHECK(dropped > 0);
}

TEMPLATE_TEST_CASE("emulated dropout_backward masks and scales like the CPU, in place too",
                   "[cuda-emulated][dropout]", float, double) {
  std::mt19937_64 rng(52);
  for (double p : {0.0, 0.3, 0.75, 1.0}) {
    for (int64_t n : kLengths) {
      const std::string what = "n " + std::to_string(n) + ", p " + std::to_string(p);
      const auto dy = ember::test::random_vector<TestType>(n, rng);
      const auto mask = ember::test::random_vector<uint8_t>(n, rng, 0, 2);
      std::vector<TestType> dx = poisoned<TestType>(n), want = poisoned<TestType>(n);
      cuda::dropout_backward<TestType>(dy.data(), mask.data(), dx.data(), n, p, ember::test::default_stream());
      cpu::dropout_backward<TestType>(dy.data(), mask.data(), want.data(), n, p);
      CHECK(matches(dx, want, "dropout_backward, " + what, 0.0));
      std::vector<TestType> in_place = dy;
      cuda::dropout_backward<TestType>(in_place.data(), mask.data(), in_place.data(), n, p,
                                       ember::test::default_stream());
      CHECK(matches(in_place, want, "dropout_backward in place, " + what, 0.0));
    }
  }
}
