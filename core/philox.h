// Philox-4x32-10: a counter-based generator. Block b of a stream with key `seed` is
// philox(seed, b): four 32-bit words that depend on (seed, b) alone, so any element of a random
// tensor can be computed on its own, on any thread, on the CPU or the GPU, with the same result.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace tandem {

struct PhiloxBlock {
  uint32_t w[4];
};

// The Philox-4x32 bijection with 10 rounds, on a 128-bit counter and a 64-bit key.
TD_INLINE PhiloxBlock philox4x32_10(PhiloxBlock counter, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = counter.w[0], c1 = counter.w[1], c2 = counter.w[2], c3 = counter.w[3];
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kMul1) * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return PhiloxBlock{{c0, c1, c2, c3}};
}

// Block `block` of the stream keyed by `seed`.
TD_INLINE PhiloxBlock philox_block(uint64_t seed, uint64_t block) {
  PhiloxBlock counter{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0, 0}};
  return philox4x32_10(counter, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Word `index` of the stream that starts at block `offset`: the stream is the blocks' words in order.
TD_INLINE uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox_block(seed, offset + index / 4).w[index % 4];
}

// Uniform floats in [0, 1) from the top 24 (float) or 53 (double) bits.
TD_INLINE float uniform_float(uint32_t word) { return static_cast<float>(word >> 8) * 5.9604644775390625e-08f; }
TD_INLINE double uniform_double(uint32_t lo, uint32_t hi) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * 1.1102230246251565e-16;
}

}  // namespace tandem
