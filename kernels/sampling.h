// Samplers that take a varying number of uniform draws per element (Poisson, binomial), the same
// code on the CPU and the GPU. Element i of a call owns Philox block `offset + i` of its generator's
// reserved range; its draws come from the counters (that block, j, 1) for j = 0, 1, ...: a stream of
// its own, disjoint from every block of the ordinary stream (whose counters end in 0, 0), so each
// element's value depends on the seed, the offset and i alone, whatever the thread or device.
#pragma once

#include <cstdint>

#include "core/macros.h"
#include "core/philox.h"
#include "kernels/special.h"

namespace tandem::fn {

class ElementStream {
 public:
  TD_INLINE ElementStream(uint64_t seed, uint64_t block) : seed_(seed), block_(block) {}

  // Uniform in [0, 1) with 53 bits; two per Philox block.
  TD_INLINE double uniform() {
    if (used_ == 2) {
      const PhiloxBlock counter{
          {static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32), next_counter_++, 1u}};
      words_ = philox4x32_10(counter, static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32));
      used_ = 0;
    }
    const int first = 2 * used_++;
    return uniform_double(words_.w[first], words_.w[first + 1]);
  }

 private:
  uint64_t seed_, block_;
  uint32_t next_counter_ = 0;
  int used_ = 2;
  PhiloxBlock words_{};
};

// A Poisson variate of mean `rate` (>= 0; inf gives inf). Below 10, the number of uniforms whose
// running product stays above e^-rate (about rate + 1 draws). From 10 on, Hormann's transformed
// rejection with squeeze (PTRS, 1993): about 1.1 pairs of draws per variate at any rate. Beyond
// about 1e15 its acceptance test, k log(rate) - lgamma(k + 1) - rate, cancels to a few digits.
TD_INLINE double sample_poisson(double rate, ElementStream& stream) {
  if (rate == 0) return 0;
  if (rate == special::kInf) return rate;
  if (rate < 10) {
    const double limit = special::exp(-rate);
    double product = stream.uniform(), count = 0;
    while (product > limit) {
      product *= stream.uniform();
      count += 1;
    }
    return count;
  }
  const double root = special::sqrt(rate), log_rate = special::log(rate);
  const double b = 0.931 + 2.53 * root, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = stream.uniform() - 0.5, v = stream.uniform();
    const double us = 0.5 - (u < 0 ? -u : u);
    const double k = special::floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (special::log(v * inv_alpha / (a / (us * us) + b)) <= k * log_rate - rate - special::lgamma(k + 1)) return k;
  }
}

// A binomial variate of `count` trials (truncated to a whole number) with success probability
// `prob`. NaN for a NaN operand or infinite count; 0 for count or prob <= 0; count for prob >= 1.
// With p = min(prob, 1 - prob) (the other tail by symmetry): below n p = 10, trials counted by
// their geometric waiting times (about n p + 1 draws); from 10 on, Hormann's transformed rejection
// with squeeze (BTRS, 1993).
TD_INLINE double sample_binomial(double count, double prob, ElementStream& stream) {
  if (count != count || prob != prob || count == special::kInf) return special::kNaN;
  const double n = special::floor(count);
  if (n <= 0 || prob <= 0) return 0;
  if (prob >= 1) return n;
  const bool flip = prob > 0.5;
  const double p = flip ? 1 - prob : prob, q = 1 - p;
  double k = 0;
  if (n * p < 10) {
    // Successes before the trials run out: each waiting time is geometric, ceil(log U / log q).
    const double log_q = special::log1p(-p);
    double trials = 0;
    for (;;) {
      const double u = stream.uniform();
      trials += special::floor(special::log(1 - u) / log_q) + 1;  // 1 - u in (0, 1]: log never -inf
      if (trials > n) break;
      k += 1;
    }
  } else {
    const double spq = special::sqrt(n * p * q);
    const double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
    const double v_r = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, log_odds = special::log(p / q);
    const double m = special::floor((n + 1) * p);
    const double h = special::lgamma(m + 1) + special::lgamma(n - m + 1);
    for (;;) {
      const double u = stream.uniform() - 0.5, v = stream.uniform();
      const double us = 0.5 - (u < 0 ? -u : u);
      k = special::floor((2 * a / us + b) * u + c);
      if (k < 0 || k > n) continue;
      if (us >= 0.07 && v <= v_r) break;
      if (special::log(v * alpha / (a / (us * us) + b)) <=
          h - special::lgamma(k + 1) - special::lgamma(n - k + 1) + (k - m) * log_odds) {
        break;
      }
    }
  }
  return flip ? n - k : k;
}

}  // namespace tandem::fn
