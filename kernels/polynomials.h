// torch.special's orthogonal polynomials P_n(x): Chebyshev's T, U, V, W (and shifted to [0, 1]),
// Hermite's H and He, Laguerre's L and Legendre's P. The same code on the CPU and the GPU, in double
// for every floating dtype.
//
// The degree n is a number of the tensor's dtype taken toward zero, as PyTorch's; n <= -1, NaN or past
// int64 gives 0. Each polynomial runs its three-term recurrence, kept in double's
// range by rescaling both terms by a power of two (the recurrences are linear), so a value past
// double's range is +-inf with its true sign instead of the NaN of inf - inf. Chebyshev's from degree
// 64 take their closed forms instead (cos and cosh of n times an angle), any degree in constant time;
// Hermite's, Laguerre's and Legendre's take time linear in the degree, as PyTorch's. At x = +-inf, and
// past |x| = 2^600 from degree 2 on (where every kind overflows), the sign of the leading coefficient
// and n's parity settle the infinity.
#pragma once

#include <cstdint>

#include "kernels/special.h"

namespace tandem::fn::special {

enum class Polynomial {
  ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP,
};

// n as a whole degree, or -1 where the result is 0.
TD_INLINE int64_t polynomial_degree(double n) {
  if (!(n > -1) || n >= 9.2233720368547758e18) return -1;  // (-1, 0) is degree 0
  return static_cast<int64_t>(n);
}

// P_1 and the recurrence P_{k+1} = a_k P_k - b_k P_{k-1} (each divided by the coefficient of
// P_{k+1}) of each kind.
TD_INLINE double polynomial_first(Polynomial kind, double x) {
  switch (kind) {
    case Polynomial::ChebyshevT:
    case Polynomial::HermiteHe:
    case Polynomial::LegendreP: return x;
    case Polynomial::ChebyshevU:
    case Polynomial::HermiteH: return 2 * x;
    case Polynomial::ChebyshevV: return 2 * x - 1;
    case Polynomial::ChebyshevW: return 2 * x + 1;
    case Polynomial::LaguerreL: return 1 - x;
  }
  return x;
}

TD_INLINE double polynomial_next(Polynomial kind, double x, int64_t k, double current, double previous) {
  const double kd = static_cast<double>(k);
  switch (kind) {
    case Polynomial::ChebyshevT:
    case Polynomial::ChebyshevU:
    case Polynomial::ChebyshevV:
    case Polynomial::ChebyshevW: return 2 * x * current - previous;
    case Polynomial::HermiteH: return 2 * x * current - 2 * kd * previous;
    case Polynomial::HermiteHe: return x * current - kd * previous;
    // The divisions first, so that a value near the largest double is not overflowed on the way.
    case Polynomial::LaguerreL: return (2 * kd + 1 - x) / (kd + 1) * current - kd / (kd + 1) * previous;
    case Polynomial::LegendreP: return (2 * kd + 1) / (kd + 1) * x * current - kd / (kd + 1) * previous;
  }
  return current;
}

// Whenever the larger of the two terms leaves [2^-256, 2^256], both are scaled by a power of two into
// [1, 2), the exponent kept aside.
TD_INLINE void polynomial_rescale(double& current, double& previous, int64_t& exponent) {
  const double a = current < 0 ? -current : current, b = previous < 0 ? -previous : previous;
  const double larger = a > b ? a : b;
  if (larger > 0x1p256 || (larger < 0x1p-256 && larger > 0)) {
    const int e = ilogb(larger);
    current = ldexp(current, -e);
    previous = ldexp(previous, -e);
    exponent += e;
  }
}

// P_n(x) by the recurrence, n >= 1, |x| <= 2^600, rescaled at every step: no product overflows (each
// coefficient is below 2^602 and each term below 2^256), and the result is scaled back once.
TD_INLINE double polynomial_recurrence(Polynomial kind, int64_t n, double x) {
  double previous = 1, current = polynomial_first(kind, x);
  int64_t exponent = 0;
  polynomial_rescale(current, previous, exponent);
  for (int64_t k = 1; k < n; ++k) {
    const double next = polynomial_next(kind, x, k, current, previous);
    previous = current;
    current = next;
    polynomial_rescale(current, previous, exponent);
  }
  const int64_t clamped = exponent > 4000 ? 4000 : (exponent < -4000 ? -4000 : exponent);
  return ldexp(current, static_cast<int>(clamped));
}

// log(cosh(y)) and log(sinh(y)) for y > 0: beyond 700 both are y - log 2 in double.
TD_INLINE double log_cosh(double y) { return y > 700 ? y - 0.69314718055994531 : log(cosh(y)); }
TD_INLINE double log_sinh(double y) { return y > 700 ? y - 0.69314718055994531 : log(sinh(y)); }

// Chebyshev's four kinds in closed form, n >= 1, x finite, |x| != 1. Within (-1, 1), x = cos t:
//   T = cos(n t), U = sin((n + 1) t) / sin t, V = cos((n + 1/2) t) / cos(t/2), W = sin((n + 1/2) t) / sin(t/2).
// Beyond, for x = cosh a > 1 the same with cosh and sinh, taken through exp once they would overflow
// (cosh(y) ~ e^y / 2). Negative x by T(-x) = (-1)^n T(x), U likewise, V(-x) = (-1)^n W(x), W(-x) =
// (-1)^n V(x): near -1 the angle's rounding would wipe out sin((n + 1) t) with t close to pi.
TD_INLINE double chebyshev_closed(Polynomial kind, int64_t n, double x) {
  const double nd = static_cast<double>(n);
  const bool negative = x < 0;
  const double sign = negative && n % 2 == 1 ? -1.0 : 1.0;
  if (negative && kind == Polynomial::ChebyshevV) {
    kind = Polynomial::ChebyshevW;
  } else if (negative && kind == Polynomial::ChebyshevW) {
    kind = Polynomial::ChebyshevV;
  }
  if (negative) x = -x;
  if (x < 1) {
    const double t = acos(x);
    switch (kind) {
      case Polynomial::ChebyshevT: return sign * cos(nd * t);
      case Polynomial::ChebyshevU: return sign * sin((nd + 1) * t) / sin(t);
      case Polynomial::ChebyshevV: return sign * cos((nd + 0.5) * t) / cos(t / 2);
      default: return sign * sin((nd + 0.5) * t) / sin(t / 2);
    }
  }
  const double a = acosh(x);
  const double top = (kind == Polynomial::ChebyshevT ? nd : (kind == Polynomial::ChebyshevU ? nd + 1 : nd + 0.5)) * a;
  if (top <= 700) {  // directly: exp(log(...)) would add the logarithm's rounding times its size
    switch (kind) {
      case Polynomial::ChebyshevT: return sign * cosh(top);
      case Polynomial::ChebyshevU: return sign * sinh(top) / sinh(a);
      case Polynomial::ChebyshevV: return sign * cosh(top) / cosh(a / 2);
      default: return sign * sinh(top) / sinh(a / 2);
    }
  }
  double log_value = 0;
  switch (kind) {
    case Polynomial::ChebyshevT: log_value = log_cosh(nd * a); break;
    case Polynomial::ChebyshevU: log_value = log_sinh((nd + 1) * a) - log_sinh(a); break;
    case Polynomial::ChebyshevV: log_value = log_cosh((nd + 0.5) * a) - log_cosh(a / 2); break;
    default: log_value = log_sinh((nd + 0.5) * a) - log_sinh(a / 2); break;
  }
  return sign * exp(log_value);
}

TD_INLINE double orthogonal_polynomial(Polynomial kind, double x, double n_value) {
  const int64_t n = polynomial_degree(n_value);
  if (n < 0) return 0;
  if (n == 0) return 1;  // NaN and infinite x too, as PyTorch's
  if (x != x) return x;
  const bool odd = n % 2 == 1;
  const bool huge = x == kInf || x == -kInf || ((x < 0 ? -x : x) > 0x1p600 && n >= 2);
  if (huge) {
    // Every leading coefficient is positive but Laguerre's, (-1)^n / n!; past 2^600 the leading term
    // overflows (|x|^n / n! > (2^600 / 2^63)^n for Laguerre's) and the others are far smaller.
    const bool negative = (x < 0 && odd) != (kind == Polynomial::LaguerreL && odd);
    return negative ? -kInf : kInf;
  }
  const bool chebyshev = kind == Polynomial::ChebyshevT || kind == Polynomial::ChebyshevU ||
                         kind == Polynomial::ChebyshevV || kind == Polynomial::ChebyshevW;
  if ((chebyshev || kind == Polynomial::LegendreP) && (x == 1 || x == -1)) {
    // T(1) = V(1) = P(1) = 1, U(1) = n + 1, W(1) = 2n + 1; at -1 times (-1)^n, V and W swapped.
    const double nd = static_cast<double>(n);
    double at_one = 1;
    Polynomial k = kind;
    if (x < 0 && kind == Polynomial::ChebyshevV) k = Polynomial::ChebyshevW;
    if (x < 0 && kind == Polynomial::ChebyshevW) k = Polynomial::ChebyshevV;
    if (k == Polynomial::ChebyshevU) at_one = nd + 1;
    if (k == Polynomial::ChebyshevW) at_one = 2 * nd + 1;
    return x < 0 && odd ? -at_one : at_one;
  }
  if (chebyshev && n >= 64) return chebyshev_closed(kind, n, x);
  return polynomial_recurrence(kind, n, x);
}

}  // namespace tandem::fn::special
