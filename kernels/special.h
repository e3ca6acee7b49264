// Special functions for the element-wise kernels (kernels/functors.h), the same code on the CPU
// and the GPU. Each computes in double (float inputs are widened, so both dtypes get results
// within a few ulps of their own precision) with series, recurrences and asymptotic expansions
// chosen by the argument's range.
#pragma once

#include <cmath>
#include <limits>

#include "core/macros.h"

namespace tandem::fn::special {

inline constexpr double kPi = 3.14159265358979323846;
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

#if defined(__CUDA_ARCH__)
TD_INLINE double lgamma(double x) { return ::lgamma(x); }
TD_INLINE double erf(double x) { return ::erf(x); }
TD_INLINE double erfc(double x) { return ::erfc(x); }
TD_INLINE double exp(double x) { return ::exp(x); }
TD_INLINE double log(double x) { return ::log(x); }
TD_INLINE double log1p(double x) { return ::log1p(x); }
TD_INLINE double expm1(double x) { return ::expm1(x); }
TD_INLINE double pow(double a, double b) { return ::pow(a, b); }
TD_INLINE double sqrt(double x) { return ::sqrt(x); }
TD_INLINE double tan(double x) { return ::tan(x); }
TD_INLINE double sin(double x) { return ::sin(x); }
TD_INLINE double cos(double x) { return ::cos(x); }
TD_INLINE double sinh(double x) { return ::sinh(x); }
TD_INLINE double cosh(double x) { return ::cosh(x); }
TD_INLINE double acos(double x) { return ::acos(x); }
TD_INLINE double acosh(double x) { return ::acosh(x); }
TD_INLINE double ldexp(double x, int e) { return ::ldexp(x, e); }
TD_INLINE int ilogb(double x) { return ::ilogb(x); }
TD_INLINE double floor(double x) { return ::floor(x); }
TD_INLINE double nearbyint(double x) { return ::nearbyint(x); }
#else
// lgamma_r: std::lgamma writes the sign to a global, a data race between the CPU loops' threads.
inline double lgamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}
inline double erf(double x) { return std::erf(x); }
inline double erfc(double x) { return std::erfc(x); }
inline double exp(double x) { return std::exp(x); }
inline double log(double x) { return std::log(x); }
inline double log1p(double x) { return std::log1p(x); }
inline double expm1(double x) { return std::expm1(x); }
inline double pow(double a, double b) { return std::pow(a, b); }
inline double sqrt(double x) { return std::sqrt(x); }
inline double tan(double x) { return std::tan(x); }
inline double sin(double x) { return std::sin(x); }
inline double cos(double x) { return std::cos(x); }
inline double sinh(double x) { return std::sinh(x); }
inline double cosh(double x) { return std::cosh(x); }
inline double acos(double x) { return std::acos(x); }
inline double acosh(double x) { return std::acosh(x); }
inline double ldexp(double x, int e) { return std::ldexp(x, e); }
inline int ilogb(double x) { return std::ilogb(x); }
inline double floor(double x) { return std::floor(x); }
inline double nearbyint(double x) { return std::nearbyint(x); }
#endif

// The digamma function: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
// asymptotic series in 1/x^2 (Bernoulli numbers). Negative x by the reflection
// psi(x) = psi(1 - x) - pi / tan(pi x), the tangent's argument reduced to [-1/2, 1/2] exactly.
// Poles: -inf at +0, +inf at -0 (the limits from each side), NaN at the negative integers.
TD_INLINE double digamma(double x) {
  if (x != x) return x;
  if (x == 0) return 1 / x < 0 ? kInf : -kInf;
  double result = 0;
  if (x < 0) {
    if (x == floor(x)) return kNaN;
    result = -kPi / tan(kPi * (x - nearbyint(x)));
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  const double r2 = 1 / (x * x);
  // sum of B_2k / (2k x^2k), k = 1..7
  const double series =
      r2 * (1.0 / 12 -
            r2 * (1.0 / 120 - r2 * (1.0 / 252 - r2 * (1.0 / 240 - r2 * (1.0 / 132 - r2 * (691.0 / 32760 - r2 / 12))))));
  return result + log(x) - 0.5 / x - series;
}

// The Hurwitz zeta function sum over k >= 0 of (k + q)^-x (torch.special.zeta), by Euler-Maclaurin
// summation: the first terms directly until q + k >= max(10, x) + 5 (12 corrections then reach
// double's rounding), then the integral of the rest, half its first term, and the Bernoulli
// corrections B_2j / (2j)! x (x+1)...(x+2j-2) a^(-x-2j+1). inf at x = 1 and at q a non-positive
// integer; NaN for x < 1 and for q < 0 with x not an integer; at x = inf the limits (1 at q = 1).
TD_INLINE double zeta(double x, double q) {
  if (x != x || q != q) return kNaN;
  if (x == 1) return kInf;
  if (x < 1) return kNaN;
  if (x == kInf && q > 0) return q < 1 ? kInf : (q == 1 ? 1 : 0);
  if (q <= 0) {
    if (q == floor(q)) return kInf;
    if (x != floor(x)) return kNaN;
  }
  constexpr double kCorrections[] = {8.333333333333333e-02,  -1.388888888888889e-03,  3.306878306878307e-05,
                                     -8.267195767195768e-07, 2.08767569878681e-08,    -5.284190138687493e-10,
                                     1.3382536530684679e-11, -3.3896802963225827e-13, 8.586062056277845e-15,
                                     -2.174868698558062e-16, 5.5090028283602295e-18,  -1.3954464685812522e-19};
  double sum = 0, a = q;
  const double start = (x > 10 ? x : 10) + 5;
  for (int k = 0; a < start && k < 100000; ++k, a += 1) sum += pow(a, -x);
  sum += pow(a, 1 - x) / (x - 1) + 0.5 * pow(a, -x);
  double rising = x;              // x (x+1) ... (x+2j-2)
  double power = pow(a, -x - 1);  // a^(-x-2j+1)
  for (int j = 0; j < 12; ++j) {
    const double term = kCorrections[j] * rising * power;
    sum += term;
    if (term == 0 || (term < 0 ? -term : term) <= 1e-17 * (sum < 0 ? -sum : sum)) break;
    rising *= (x + 2 * j + 1) * (x + 2 * j + 2);
    power /= a * a;
  }
  return sum;
}

// exp(x^2) erfc(x) (torch.special.erfcx): directly below 4, where exp(x^2) loses no more than
// the rounding of x^2; past it the continued fraction of erfc (Lentz's method), which needs
// few terms there; 1 / (x sqrt(pi)) where x^2 would overflow. Negative x by
// erfcx(x) = 2 exp(x^2) - erfcx(-x), inf once exp(x^2) overflows.
TD_INLINE double erfcx(double x) {
  if (x != x) return x;
  if (x < 0) {
    if (x < -26.7) return kInf;
    return 2 * exp(x * x) - erfcx(-x);
  }
  if (x < 4) return exp(x * x) * erfc(x);
  const double inv_sqrt_pi = 0.56418958354775628695;
  if (x > 5e7) return inv_sqrt_pi / x;
  // erfcx(x) = (1/sqrt(pi)) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))).
  const double tiny = 1e-300;
  double f = x, c = x, d = 0;
  for (int k = 1; k < 200; ++k) {
    const double an = 0.5 * k;
    d = x + an * d;
    d = d == 0 ? 1 / tiny : 1 / d;
    c = x + an / c;
    if (c == 0) c = tiny;
    const double delta = c * d;
    f *= delta;
    if ((delta - 1 < 0 ? 1 - delta : delta - 1) < 1e-16) break;
  }
  return inv_sqrt_pi / f;
}

// exp(-|x|) I_order(|x|) for order 0 or 1, the modified Bessel functions of the first kind scaled:
// the power series up to |x| = 25 (positive terms, no cancellation), the asymptotic expansion
// beyond (its error there is below double's rounding).
TD_INLINE double bessel_i_scaled(double x, int order) {
  const double ax = x < 0 ? -x : x;
  if (ax <= 25) {
    const double y = ax * ax / 4;
    double term = order == 0 ? 1 : ax / 2, sum = term;
    for (int k = 1; k < 200 && term > 1e-17 * sum; ++k) {
      term *= y / (k * (k + order));
      sum += term;
    }
    return sum * exp(-ax);
  }
  const double mu = 4.0 * order * order;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8 * ax);
    sum += term;
    if ((term < 0 ? -term : term) <= 1e-17 * sum) break;
  }
  return sum / sqrt(2 * kPi * ax);
}

// I0 and I1 unscaled; exp(|x|) is taken in two halves, so values near the largest double do not
// overflow on the way. I1 is odd.
TD_INLINE double bessel_i0(double x) {
  if (x != x) return x;
  const double ax = x < 0 ? -x : x, half = exp(ax / 2);
  return bessel_i_scaled(x, 0) * half * half;
}
TD_INLINE double bessel_i0e(double x) { return x != x ? x : bessel_i_scaled(x, 0); }
TD_INLINE double bessel_i1(double x) {
  if (x != x) return x;
  const double ax = x < 0 ? -x : x, half = exp(ax / 2);
  const double value = bessel_i_scaled(x, 1) * half * half;
  return x < 0 ? -value : value;
}
TD_INLINE double bessel_i1e(double x) {
  if (x != x) return x;
  const double value = bessel_i_scaled(x, 1);
  return x < 0 ? -value : value;
}

// The inverse of the standard normal CDF (torch.special.ndtri), by Halley steps on the CDF. Within
// (1/4, 3/4) they start from the line through the middle and solve 0.5 erf(x / sqrt 2) = p - 1/2
// (p - 1/2 is exact there, so x keeps its relative accuracy next to 0). In the tails, for the
// smaller q = min(p, 1 - p), a rational first guess (Abramowitz and Stegun 26.2.23, within 4.5e-4),
// then steps on 0.5 erfc(-x / sqrt 2) = q, exact where 1 - q would not be.
TD_INLINE double ndtri(double p) {
  if (p != p || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  const double inv_sqrt2 = 0.70710678118654752440, inv_sqrt_2pi = 0.39894228040143267794;
  if (p > 0.25 && p < 0.75) {
    const double centred = p - 0.5;
    double x = centred / inv_sqrt_2pi;
    for (int step = 0; step < 4; ++step) {
      const double ratio = (0.5 * erf(x * inv_sqrt2) - centred) / (inv_sqrt_2pi * exp(-0.5 * x * x));
      x -= ratio / (1 + 0.5 * x * ratio);
    }
    return x;
  }
  const double q = p < 0.5 ? p : 1 - p;
  const double t = sqrt(-2 * log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int step = 0; step < 3; ++step) {
    const double density = inv_sqrt_2pi * exp(-0.5 * x * x);
    if (density == 0) break;
    const double ratio = (0.5 * erfc(-x * inv_sqrt2) - q) / density;
    x -= ratio / (1 + 0.5 * x * ratio);
  }
  return p < 0.5 ? x : -x;
}

// log Gamma(1 + a) for |a| < 0.05 by its Taylor series -euler a + sum zeta(k) (-a)^k / k, where
// lgamma(1 + a) would round a away in 1 + a (for a = 1e-10 it keeps six digits).
TD_INLINE double lgamma1p_small(double a) {
  constexpr double kEuler = 0.57721566490153286061;
  constexpr double kZeta[] = {1.6449340668482264365, 1.2020569031595942854, 1.0823232337111381915,
                              1.0369277551433699263, 1.0173430619844491397, 1.0083492773819228268,
                              1.0040773561979443394, 1.0020083928260822144, 1.0009945751278180853,
                              1.0004941886041194646, 1.0002460865533080483};  // zeta(2) .. zeta(12)
  double sum = 0, power = -a;  // (-a)^k
  for (int k = 2; k <= 12; ++k) {
    power *= -a;
    sum += kZeta[k - 2] * power / k;
  }
  return -kEuler * a + sum;
}

// t - log(1 + t) for |t| <= 1/4, by its series t^2/2 - t^3/3 + ..., where the difference would cancel.
TD_INLINE double log1p_gap_small(double t) {
  double sum = 0, power = -t;  // (-t)^k
  for (int k = 2; k < 40; ++k) {
    power *= -t;
    const double term = power / k;
    sum += term;
    if ((term < 0 ? -term : term) <= 1e-17 * sum) break;
  }
  return sum;
}

// x^a e^-x / Gamma(a + 1), the factor in front of the incomplete gamma's series and continued
// fraction. For a >= 10, as exp(-a (t - log(1 + t))) / (sqrt(2 pi a) e^s(a)) with t = (x - a) / a
// and s Stirling's remainder (its series to a^-15), so that no large logarithms cancel: a log x - x
// and lgamma(a + 1) are each near 1.3e7 for a = 1e6, and their difference would lose 9 digits.
// x - a is exact for x within a factor 2 of a, so t keeps its digits there (x / a - 1 would not).
// s(a) = log Gamma(a + 1) - log(sqrt(2 pi a) (a / e)^a), Stirling's remainder, by its series
// B_2k / (2k (2k - 1) a^(2k - 1)), k = 1..8: for a >= 10.
TD_INLINE double stirling_remainder(double a) {
  const double r = 1 / a, r2 = r * r;
  return r * (1.0 / 12 -
              r2 * (1.0 / 360 -
                    r2 * (1.0 / 1260 -
                          r2 * (1.0 / 1680 -
                                r2 * (1.0 / 1188 - r2 * (691.0 / 360360 - r2 * (1.0 / 156 - r2 * 3617.0 / 122400)))))));
}

TD_INLINE double incomplete_gamma_factor(double a, double x) {
  if (a < 10) return exp(a * log(x) - x - (a < 0.05 ? lgamma1p_small(a) : lgamma(a + 1)));
  const double stirling = stirling_remainder(a);
  const double t = (x - a) / a;
  double exponent;
  if (t >= -0.25 && t <= 0.25) {
    exponent = -a * log1p_gap_small(t);
  } else if (x > 0.5 * a && x < 2 * a) {
    exponent = a * (log1p(t) - t);
  } else {
    exponent = a * log(x / a) + (a - x);
  }
  return exp(exponent - stirling) / sqrt(2 * kPi * a);
}

// Temme's uniform asymptotic expansion of the incomplete gamma functions for large a (DLMF 8.12):
// Q = erfc(eta sqrt(a / 2)) / 2 + R, P = erfc(-eta sqrt(a / 2)) / 2 - R, with eta^2 / 2 = t - log(1 + t)
// (t = (x - a) / a, eta of t's sign) and R = e^(-a eta^2 / 2) / sqrt(2 pi a) (c0(eta) + c1(eta) / a).
// The next term is about 0.004 / a^2 of R: below double's rounding for a >= 1e7, where the series and
// the continued fraction would need 10 sqrt(a) terms. c0 = 1/t - 1/eta and c1 = 1/eta^3 - 1/t^3 -
// 1/t^2 - 1/(12 t) cancel near t = 0: there their Taylor series in eta.
struct TemmeTerms {
  double half_eta2, eta, c;  // eta^2 / 2, eta, and c0 + c1 / a
};

TD_INLINE TemmeTerms temme_terms(double a, double x) {
  const double t = (x - a) / a;
  const double half_eta2 = t >= -0.25 && t <= 0.25 ? log1p_gap_small(t) : t - log1p(t);
  const double eta = t < 0 ? -sqrt(2 * half_eta2) : sqrt(2 * half_eta2);
  double c0, c1;
  if (eta > -0.01 && eta < 0.01) {
    c0 = -1.0 / 3 + eta * (1.0 / 12 + eta * (-2.0 / 135 + eta * (1.0 / 864 + eta * (1.0 / 2835 - eta * 139.0 / 777600))));
    c1 = -1.0 / 540 - eta / 288;  // c1 / a is below 1e-9 of R: two terms are plenty
  } else {
    c0 = 1 / t - 1 / eta;
    c1 = 1 / (eta * eta * eta) - 1 / (t * t * t) - 1 / (t * t) - 1 / (12 * t);
  }
  return {half_eta2, eta, c0 + c1 / a};
}

TD_INLINE double incomplete_gamma_large(double a, double x, bool upper) {
  const TemmeTerms k = temme_terms(a, x);
  const double r = exp(-a * k.half_eta2) / sqrt(2 * kPi * a) * k.c;
  const double z = k.eta * sqrt(a / 2);
  return upper ? 0.5 * erfc(z) + r : 0.5 * erfc(-z) - r;
}

// The smaller of Temme's two tails (Q above a, P below) times e^(a eta^2 / 2), which cancels the
// exponential in both of its terms: erfc(|z|) e^(z^2) = erfcx(|z|), so nothing underflows.
TD_INLINE double incomplete_gamma_large_scaled_tail(double a, double x) {
  const TemmeTerms k = temme_terms(a, x);
  const double r = k.c / sqrt(2 * kPi * a);
  const double z = k.eta * sqrt(a / 2);
  return x > a ? 0.5 * erfcx(z) + r : 0.5 * erfcx(-z) - r;
}

// The regularized incomplete gamma functions P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P
// (torch.special.gammainc and gammaincc). Each is computed directly where it is the smaller or
// where 1 - the other would cancel, the other as 1 - it:
// - for a >= 1e7 within 30% of x = a, Temme's expansion (incomplete_gamma_large);
// - P by its series x^a e^-x / Gamma(a + 1) sum x^n / ((a + 1) ... (a + n)) for x < a + 1;
// - Q by the continued fraction x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))
//   (Lentz's method) for x >= a + 1;
// - Q for a < 1 and x < a + 1 (P near 1 when a is small) by Q = 1 - x^a / Gamma(a + 1) T, with
//   T = sum a (-x)^n / ((a + n) n!), arranged as -expm1(log of x^a / Gamma(a + 1)) - that (T - 1):
//   exact to the last digits when a is tiny (Q(1e-300, 0.5) = 5.5977e-301).
// Near x = a the series and the fraction take about 10 sqrt(a) terms: 30000 at a = 1e7. Results are
// kept in [0, 1]. The edges as PyTorch's: NaN for a < 0 or x < 0; P(0, x > 0) = 1 and P(0, 0) = NaN;
// P(a, 0) = 0 and P(inf, x) = 0 (a NaN too); P(a, inf) = 1, P(inf, inf) = NaN; otherwise NaN in, NaN out.
TD_INLINE double incomplete_gamma(double a, double x, bool upper) {
  if (a < 0 || x < 0) return kNaN;
  if (a == 0) {
    if (!(x > 0)) return kNaN;
    return upper ? 0 : 1;
  }
  if (x == 0) return upper ? 1 : 0;
  if (a == kInf) {
    if (x == kInf) return kNaN;
    return upper ? 1 : 0;
  }
  if (x == kInf) return upper ? 0 : 1;
  if (a != a || x != x) return kNaN;
  if (a >= 1e7 && x > 0.7 * a && x < 1.3 * a) return incomplete_gamma_large(a, x, upper);
  constexpr int kMaxTerms = 100000;
  constexpr double kEps = 1e-17;
  double result;
  if (x < a + 1) {
    if (upper && a < 1) {
      const double log_factor = a * log(x) - (a < 0.05 ? lgamma1p_small(a) : lgamma(a + 1));
      double term = 1, tail = 0;  // term: (-x)^n / n!; tail: T - 1
      for (int n = 1; n < 100; ++n) {
        term *= -x / n;
        const double add = a * term / (a + n);
        tail += add;
        if ((add < 0 ? -add : add) <= kEps * (tail < 0 ? -tail : tail)) break;
      }
      result = -expm1(log_factor) - exp(log_factor) * tail;
    } else {
      double term = 1, sum = 1;
      for (int n = 1; n < kMaxTerms; ++n) {
        term *= x / (a + n);
        sum += term;
        if (term <= kEps * sum) break;
      }
      const double p = incomplete_gamma_factor(a, x) * sum;
      result = upper ? 1 - p : p;
    }
  } else {
    // Lentz's method on b_0 + a_1 / (b_1 + a_2 / (b_2 + ...)), b_n = x - a + 2n + 1, a_n = -n (n - a).
    const double tiny = 1e-300;
    double b = (x - a) + 1, c = 1 / tiny, d = 1 / b, f = d;
    for (int n = 1; n < kMaxTerms; ++n) {
      const double an = -n * (n - a);
      b += 2;
      d = an * d + b;
      if (d == 0) d = tiny;
      c = b + an / c;
      if (c == 0) c = tiny;
      d = 1 / d;
      const double delta = c * d;
      f *= delta;
      if ((delta - 1 < 0 ? 1 - delta : delta - 1) < kEps) break;
    }
    const double q = incomplete_gamma_factor(a, x) * a * f;  // x^a e^-x / Gamma(a) = a x^a e^-x / Gamma(a + 1)
    result = upper ? q : 1 - q;
  }
  return result < 0 ? 0 : (result > 1 ? 1 : result);
}


// dx/da for x drawn from Gamma(a, 1) as the inverse of its CDF at a fixed uniform: the implicit
// (reparameterized) gradient -(dP(a, x)/da) / p(x), p(x) = x^(a-1) e^-x / Gamma(a), the derivative
// of torch._standard_gamma (its _standard_gamma_grad). Each of incomplete_gamma's branches is
// differentiated in a with the density divided out by hand, so nothing underflows and nothing
// cancels:
// - x < a + 1: P = x^a e^-x / Gamma(a + 1) S with S = sum t_n, t_n = x^n / ((a + 1) ... (a + n)),
//   so dx/da = (x / a) ((psi(a + 1) - log x) S + sum t_n H_n), H_n = sum_{k <= n} 1 / (a + k): both
//   terms are positive while x < e^psi(a + 1) (about a + 1/2), and the first is small after that;
// - x >= a + 1: Q = p(x) x f, f the continued fraction, so dx/da = (dQ/da) / p(x) =
//   x (f (log x - psi(a)) + df/da), with df/da carried through Lentz's recurrences (both positive);
// - a >= 1e7 within 30% of a, where those take 10 sqrt(a) terms: the derivative of Temme's expansion,
//   its exponential divided out by hand (a fourth-order central difference for the rest);
// - a >= 1e20: the leading order of Temme's expansion, within O(1 / a).
// x = 0 (a draw that underflowed) gives 0, x = inf or a = inf NaN; NaN in, NaN out.
TD_INLINE double standard_gamma_grad(double a, double x) {
  if (a != a || x != x || !(a > 0) || x < 0 || a == kInf || x == kInf) return kNaN;
  if (x == 0) return 0;
  constexpr int kMaxTerms = 100000;
  constexpr double kEps = 1e-17;
  if (a >= 1e20) {
    // z = eta sqrt(a / 2) is constant at a fixed quantile up to O(1 / sqrt(a)) of it, so
    // d eta / da = -eta / (2a); with d(eta^2 / 2) / dt = t / (1 + t) that gives dx/da = x / a -
    // (1 + t) (eta^2 / 2) / t: 1 + z / sqrt(2a) + O(1 / a) near x = a.
    const double t = (x - a) / a;
    if (t == 0) return 1;
    const double half_eta2 = t >= -0.25 && t <= 0.25 ? log1p_gap_small(t) : t - log1p(t);
    return x / a - (1 + t) * half_eta2 / t;
  }
  if (a >= 1e7 && x > 0.7 * a && x < 1.3 * a) {
    // The smaller tail T = e^-E S, E = a eta^2 / 2 = x - a - a log(x / a) (so dE/da = -log(x / a))
    // and S its scaled form, smooth in a: dT/da = e^-E (S' + log(x / a) S), S' by its fourth-order
    // central difference over steps of about 1e-3 sqrt(a) (powers of 2: a +- 2h is exact below 1e20).
    // The density is a e^-E / (x sqrt(2 pi a) e^s(a)): e^-E cancels, so neither underflows.
    const double h = ldexp(1.0, ilogb(1e-3 * sqrt(a)));
    auto scaled = [&](double at) { return incomplete_gamma_large_scaled_tail(at, x); };
    const double slope = (8 * (scaled(a + h) - scaled(a - h)) - (scaled(a + 2 * h) - scaled(a - 2 * h))) / (12 * h);
    // log1p of the exact (x - a) / a: log(x / a) would round x / a near 1 and lose t's digits.
    const double ratio =
        (slope + log1p((x - a) / a) * scaled(a)) * x * sqrt(2 * kPi * a) * exp(stirling_remainder(a)) / a;
    return x > a ? ratio : -ratio;  // dQ/da / density above a, -dP/da / density below
  }
  if (x < a + 1) {
    double term = 1, sum = 1, harmonic = 0, weighted = 0;  // t_n, S, H_n, sum t_n H_n
    for (int n = 1; n < kMaxTerms; ++n) {
      term *= x / (a + n);
      harmonic += 1 / (a + n);
      sum += term;
      weighted += term * harmonic;
      if (term * harmonic <= kEps * weighted && term <= kEps * sum) break;
    }
    return x / a * ((digamma(a + 1) - log(x)) * sum + weighted);
  }
  // Lentz's method as in incomplete_gamma, each quantity with its derivative in a (the d-prefixed
  // names): b_n = x - a + 2n + 1 (db = -1), a_n = -n (n - a) (da_n = n).
  const double tiny = 1e-300;
  double b = (x - a) + 1, c = 1 / tiny, dc = 0, d = 1 / b, dd = 1 / (b * b), f = d, df = dd;
  for (int n = 1; n < kMaxTerms; ++n) {
    const double an = -n * (n - a);
    b += 2;
    double next_d = an * d + b;
    const double next_dd = n * d + an * dd - 1;
    if (next_d == 0) next_d = tiny;
    double next_c = b + an / c;
    const double next_dc = -1 + (n * c - an * dc) / (c * c);
    if (next_c == 0) next_c = tiny;
    d = 1 / next_d;
    dd = -next_dd * d * d;
    c = next_c;
    dc = next_dc;
    const double delta = c * d, ddelta = dc * d + c * dd;
    df = df * delta + f * ddelta;
    f *= delta;
    if ((delta - 1 < 0 ? 1 - delta : delta - 1) < kEps && (ddelta < 0 ? -ddelta : ddelta) <= kEps * (df / f)) break;
  }
  return x * (f * (log(x) - digamma(a)) + df);
}

}  // namespace tandem::fn::special
