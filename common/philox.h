// Philox4x32-10, the counter-based generator of Salmon et al. (SC'11), as used by cuRAND and PyTorch.
// defines: ember::philox::uniform4, ember::philox::normal4
//
// Note: the draw for element i of a tensor depends only on (seed, offset + i / 4), so the CPU and
// the CUDA kernels produce the same numbers for the same seed whatever their threading.
#pragma once

#include <cstdint>
#include <cmath>

#include "ember/common/host_device.h"

namespace ember::philox {

struct Block {
  uint32_t v[4];
};

EMBER_HOST_DEVICE inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// Ten rounds over the 128-bit counter (counter, 0) keyed by the 64-bit seed.
EMBER_HOST_DEVICE inline Block philox4x32_10(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Block{{c0, c1, c2, c3}};
}

// A uint32 to a float in (0, 1]: never 0, so log() of it is finite.
EMBER_HOST_DEVICE inline float to_unit_float(uint32_t x) {
  return (static_cast<float>(x >> 8) + 1.0f) * (1.0f / 16777216.0f);
}
EMBER_HOST_DEVICE inline double to_unit_double(uint32_t x) {
  return (static_cast<double>(x) + 1.0) * (1.0 / 4294967296.0);
}

// Element `index` of the stream (seed, offset): uniform in (0, 1].
EMBER_HOST_DEVICE inline float uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  Block b = philox4x32_10(seed, offset + index / 4);
  return to_unit_float(b.v[index % 4]);
}

// Element `index` of the stream (seed, offset): standard normal, Box-Muller over a pair of lanes.
EMBER_HOST_DEVICE inline float normal(uint64_t seed, uint64_t offset, uint64_t index) {
  Block b = philox4x32_10(seed, offset + index / 4);
  uint32_t lane = index % 4, pair = lane & ~1u;
  float u1 = to_unit_float(b.v[pair]), u2 = to_unit_float(b.v[pair + 1]);
  float radius = sqrtf(-2.0f * logf(u1));
  float angle = 6.283185307179586f * u2;
  return (lane & 1u) ? radius * sinf(angle) : radius * cosf(angle);
}

// Counters one draw of n elements consumes: the generator's offset advances by this much.
EMBER_HOST_DEVICE inline uint64_t counters_for(uint64_t n) { return (n + 3) / 4; }

}  // namespace ember::philox
