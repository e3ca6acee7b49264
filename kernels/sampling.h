// Samplers that take a varying number of uniform draws per element (Poisson, binomial, gamma), the same
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

// log(x!) - log(sqrt(2 pi x) (x/e)^x), the error of Stirling's formula, for x >= 1: by its series
// from 16 on (to x^-7: below double's rounding there), directly below (no large terms to cancel).
TD_INLINE double stirling_error(double x) {
  if (x < 16) return special::lgamma(x + 1) - (x + 0.5) * special::log(x) + x - 0.91893853320467274178;
  const double r = 1 / x, r2 = r * r;
  return r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 / 1680)));
}

// x log(x / m) + m - x >= 0, the deviance term of a mass function at x for the mean m, given their
// difference d = x - m computed exactly by the caller. Near m, by the series in v = d / (x + m)
// (d v + 2 x sum v^(2j+1) / (2j+1)), where the logarithm's terms would cancel.
TD_INLINE double deviance(double x, double m, double d) {
  if (d > -0.1 * (x + m) && d < 0.1 * (x + m)) {
    const double v = d / (x + m), v2 = v * v;
    double sum = d * v, term = 2 * x * v;
    for (int j = 1; j < 100; ++j) {
      term *= v2;
      const double next = sum + term / (2 * j + 1);
      if (next == sum) break;
      sum = next;
    }
    return sum;
  }
  return x * special::log(x / m) + m - x;
}

// log P(K = k) for a Poisson variate of mean `rate` (k >= 0 whole), exact to a few ulps at any
// rate: k log(rate) - rate - lgamma(k + 1) would cancel to nothing for a rate of 1e15.
TD_INLINE double poisson_log_mass(double k, double rate) {
  if (k == 0) return -rate;
  return -stirling_error(k) - deviance(k, rate, k - rate) - 0.5 * special::log(2 * special::kPi * k);
}

// log P(K = k) for a binomial variate of n trials with success probability p = 1 - q, 0 < p < 1, by
// the same terms (Loader's saddle-point form), so that huge n loses nothing to cancellation.
TD_INLINE double binomial_log_mass(double k, double n, double p, double q) {
  if (k == 0) return n * special::log1p(-p);
  if (k == n) return n * special::log(p);
  const double np = n * p;
  return stirling_error(n) - stirling_error(k) - stirling_error(n - k) - deviance(k, np, k - np) -
         deviance(n - k, n * q, np - k) - 0.5 * (special::log(2 * special::kPi * k) + special::log1p(-k / n));
}

// A Poisson variate of mean `rate` (>= 0; inf gives inf). Below 10, the number of uniforms whose
// running product stays above e^-rate (about rate + 1 draws). From 10 on, Hormann's transformed
// rejection with squeeze (PTRS, 1993): about 1.1 pairs of draws per variate at any rate, its
// acceptance test on the log mass function's saddle-point form (poisson_log_mass).
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
  const double root = special::sqrt(rate);
  const double b = 0.931 + 2.53 * root, a = -0.059 + 0.02483 * b;
  const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), v_r = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = stream.uniform() - 0.5, v = stream.uniform();
    const double us = 0.5 - (u < 0 ? -u : u);
    const double k = special::floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= v_r) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (special::log(v * inv_alpha / (a / (us * us) + b)) <= poisson_log_mass(k, rate)) return k;
  }
}

// A binomial variate of `count` trials with success probability `prob`, as PyTorch's at the edges:
// 0 where count or prob <= 0 (a NaN in the other too), count itself where prob >= 1, NaN for a NaN
// operand or an infinite count otherwise; count is truncated to whole trials. With p = min(prob,
// 1 - prob) (the other tail by symmetry): below n p = 10, trials counted by their geometric waiting
// times (about n p + 1 draws); from 10 on, Hormann's transformed rejection with squeeze (BTRS,
// 1993), its acceptance test on binomial_log_mass.
TD_INLINE double sample_binomial(double count, double prob, ElementStream& stream) {
  if (count <= 0 || prob <= 0) return 0;
  if (prob >= 1) return count;
  if (count != count || prob != prob || count == special::kInf) return special::kNaN;
  const double n = special::floor(count);
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
    const double v_r = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq;
    const double m = special::floor((n + 1) * p);
    const double log_mode = binomial_log_mass(m, n, p, q);
    for (;;) {
      const double u = stream.uniform() - 0.5, v = stream.uniform();
      const double us = 0.5 - (u < 0 ? -u : u);
      k = special::floor((2 * a / us + b) * u + c);
      if (k < 0 || k > n) continue;
      if (us >= 0.07 && v <= v_r) break;
      if (special::log(v * alpha / (a / (us * us) + b)) <= binomial_log_mass(k, n, p, q) - log_mode) break;
    }
  }
  return flip ? n - k : k;
}

// A standard normal variate from two uniforms: Box and Muller's cosine branch (1 - u in (0, 1], so
// the logarithm is finite).
TD_INLINE double standard_normal(ElementStream& stream) {
  const double radius = special::sqrt(-2 * special::log(1 - stream.uniform()));
  return radius * special::cos(2 * special::kPi * stream.uniform());
}

// A Gamma(alpha, 1) variate (torch._standard_gamma): 0 for alpha = 0, inf for alpha = inf, NaN for
// NaN. Marsaglia and Tsang's squeeze-and-reject method (2000), for alpha >= 1: d (1 + c z)^3 with
// d = alpha - 1/3, c = 1 / sqrt(9 d) and z normal, accepted about 95% of the time or more. Below 1,
// a Gamma(alpha + 1) variate times u^(1/alpha) (which underflows to 0 for tiny alpha: the callers
// raise the result to the dtype's smallest normal number, as PyTorch does).
TD_INLINE double sample_gamma(double alpha, ElementStream& stream) {
  if (!(alpha > 0)) return alpha == 0 ? 0 : special::kNaN;
  if (alpha == special::kInf) return alpha;
  double boost = 1;
  if (alpha < 1) {
    boost = special::exp(special::log(1 - stream.uniform()) / alpha);
    alpha += 1;
  }
  const double d = alpha - 1.0 / 3, c = 1 / special::sqrt(9 * d);
  for (;;) {
    double z, v;
    do {
      z = standard_normal(stream);
      v = 1 + c * z;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1 - stream.uniform(), z2 = z * z;
    if (u < 1 - 0.0331 * z2 * z2 || special::log(u) < 0.5 * z2 + d * (1 - v + special::log(v))) return d * v * boost;
  }
}

}  // namespace tandem::fn
