// torch.special's Bessel functions beyond i0/i1 (those are in kernels/special.h): J0, J1, Y0, Y1,
// K0 and K1 (scaled by e^x too), the spherical j0 and the Airy function Ai. The same code on the
// CPU and the GPU, in double for every floating dtype. Each is accurate to a few units of double's
// rounding, relative to the value, or near a zero of an oscillating function relative to its
// envelope (which is what any method gets from an argument rounded to double).
#pragma once

#include "kernels/special.h"

namespace tandem::fn::special {

inline constexpr double kTwoOverPi = 0.63661977236758134308;
// gamma - log 2: log(x / 2) + gamma as log(x) + this keeps subnormal x's digits (x / 2 would round them).
inline constexpr double kEulerGammaMinusLog2 = -0.11593151565841244881;

struct BesselJY {
  double j0, j1, y0, y1;
};

// J0, J1, Y0 and Y1 for 0 < x <= 25. Below 1e-5 the power series' leading terms (the next ones are
// below double's rounding). Otherwise Miller's method: the recurrence J_{m-1} = (2m / x) J_m - J_{m+1}
// is stable downwards, so it runs from an order well past x, from arbitrary small values, and the
// identity J_0 + 2 (J_2 + J_4 + ...) = 1 sets their scale. The same pass sums Neumann's series of Y0
// and Y1 in the J_m (Y1's is Y0's derivative, with J_2k' = (J_{2k-1} - J_{2k+1}) / 2):
//   Y0 = (2/pi) (log(x/2) + gamma) J0 - (4/pi) sum_{k>=1} (-1)^k J_2k / k
//   Y1 = (2/pi) ((log(x/2) + gamma) J1 - J0 / x) + (2/pi) sum_{k>=1} (-1)^k (J_{2k-1} - J_{2k+1}) / k
TD_INLINE BesselJY bessel_jy_small(double x) {
  const double log_term = log(x) + kEulerGammaMinusLog2;
  if (x < 1e-5) {
    const double q = x * x / 4;
    const double j0 = 1 - q, j1 = x / 2 * (1 - q / 2);
    return {j0, j1, kTwoOverPi * (log_term * j0 + q), -kTwoOverPi / x + x / kPi * (log_term - 0.5)};
  }
  const int top = 2 * static_cast<int>((x + 20 + 3 * sqrt(x + 1)) / 2) + 2;  // even
  double above = 0, current = 1e-300;  // J_{m+1} and J_m, unscaled
  double norm = 0, y0_sum = 0, y1_sum = 0;
  for (int m = top; m >= 1; --m) {
    if (m % 2 == 0) {
      const int k = m / 2;
      const double sign = k % 2 == 0 ? 1.0 : -1.0;
      norm += 2 * current;
      y0_sum += sign * current / k;
    } else {
      const int k = (m + 1) / 2;  // m = 2k - 1, and m = 2(k - 1) + 1 for k - 1 >= 1
      const double sign = k % 2 == 0 ? 1.0 : -1.0;
      y1_sum += sign * current / k;
      if (k >= 2) y1_sum += sign * current / (k - 1);  // -(-1)^(k-1) = (-1)^k
    }
    const double below = 2.0 * m / x * current - above;
    above = current;
    current = below;
    if ((current < 0 ? -current : current) > 1e250) {  // rescale before the next steps overflow
      current *= 1e-250;
      above *= 1e-250;
      norm *= 1e-250;
      y0_sum *= 1e-250;
      y1_sum *= 1e-250;
    }
  }
  norm += current;
  const double j0 = current / norm, j1 = above / norm;
  return {j0, j1, kTwoOverPi * (log_term * j0) - 2 * kTwoOverPi * y0_sum / norm,
          kTwoOverPi * (log_term * j1 - j0 / x) + kTwoOverPi * y1_sum / norm};
}

// J_nu and Y_nu for x > 25 by Hankel's asymptotic expansions: with chi = x - (nu/2 + 1/4) pi,
//   J_nu = sqrt(2 / (pi x)) (P cos chi - Q sin chi),  Y_nu = sqrt(2 / (pi x)) (P sin chi + Q cos chi),
// P and Q the even and odd terms of sum a_k, a_k = a_{k-1} (4 nu^2 - (2k - 1)^2) / (8 k x), signs
// alternating in pairs. For |nu| <= 1 the terms fall below 1e-17 long before they would grow again
// (the smallest is about e^-2x). cos chi and sin chi come from cos x and sin x, whose arguments the
// library reduces exactly.
TD_INLINE void bessel_hankel(double x, double nu, double& j, double& y) {
  const double mu = 4 * nu * nu;
  double p = 1, q = 0, term = 1;
  for (int k = 1; k < 80; ++k) {
    term *= (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (k % 2 == 1) {  // the signs: +Q, -P, -Q, +P, +Q, ... for k = 1, 2, 3, ...
      q += (k / 2) % 2 == 0 ? term : -term;
    } else {
      p += (k / 2) % 2 == 0 ? term : -term;
    }
    if ((term < 0 ? -term : term) < 1e-17) break;
  }
  const double phase = (nu / 2 + 0.25) * kPi, c = cos(x), s = sin(x), cp = cos(phase), sp = sin(phase);
  const double cos_chi = c * cp + s * sp, sin_chi = s * cp - c * sp;
  const double amplitude = sqrt(kTwoOverPi / x);  // pi x would overflow past 5.7e307
  j = amplitude * (p * cos_chi - q * sin_chi);
  y = amplitude * (p * sin_chi + q * cos_chi);
}

// J0 is even, J1 odd (J1(-0) = -0); NaN at the infinities, as PyTorch's (the limits are 0).
TD_INLINE double bessel_j(double x, int order) {
  if (x != x) return x;
  const double ax = x < 0 ? -x : x;
  if (ax == kInf) return kNaN;
  if (ax == 0) return order == 0 ? 1 : x;
  double j, y;
  if (ax <= 25) {
    const BesselJY small = bessel_jy_small(ax);
    j = order == 0 ? small.j0 : small.j1;
  } else {
    bessel_hankel(ax, order, j, y);
  }
  return order == 1 && x < 0 ? -j : j;
}
TD_INLINE double bessel_j0(double x) { return bessel_j(x, 0); }
TD_INLINE double bessel_j1(double x) { return bessel_j(x, 1); }

// Y0 and Y1: -inf at 0, NaN below (and at +inf, as PyTorch's).
TD_INLINE double bessel_y(double x, int order) {
  if (x != x) return x;
  if (x < 0 || x == kInf) return kNaN;
  if (x == 0) return -kInf;
  if (x <= 25) {
    const BesselJY small = bessel_jy_small(x);
    return order == 0 ? small.y0 : small.y1;
  }
  double j, y;
  bessel_hankel(x, order, j, y);
  return y;
}
TD_INLINE double bessel_y0(double x) { return bessel_y(x, 0); }
TD_INLINE double bessel_y1(double x) { return bessel_y(x, 1); }

// e^x K_nu(x) for x >= 1/2 (and any real nu of moderate size), from K_nu(x) = int_0^inf
// e^(-x cosh t) cosh(nu t) dt: the trapezoidal rule on an integrand analytic in a strip about the
// real axis and decaying doubly exponentially converges geometrically in 1/h. The step shrinks as
// 1/sqrt(x) with the integrand's width; cosh t - 1 is taken as 2 sinh^2(t/2), exact near t = 0
// where x times it matters.
TD_INLINE double bessel_k_scaled_integral(double x, double nu) {
  const double root = sqrt(x), h = 0.5 / root < 0.2 ? 0.5 / root : 0.2;
  double sum = 0.5;  // t = 0, half weight
  for (int i = 1; i < 400; ++i) {
    const double t = i * h, half = sinh(t / 2), decay = 2 * half * (x * half);  // 2 x would overflow
    const double value = exp(-decay) * (exp(nu * t) + exp(-nu * t)) / 2;
    sum += value;
    if (value < 1e-18 * sum) break;
  }
  return sum * h;
}

// e^x K0(x) and e^x K1(x) for x > 0. Up to 1 the power series (q = x^2/4, H_k = 1 + 1/2 + ... + 1/k)
//   K0 = -(log(x/2) + gamma) I0 + sum_{k>=1} H_k q^k / k!^2
//   K1 = -K0' = I0 / x + (log(x/2) + gamma) I1 - sum_{k>=1} H_k (x/2)^(2k-1) / (k! (k-1)!)
// whose cancellation costs at most a digit there; beyond, the integral above.
TD_INLINE double bessel_k_scaled(double x, int order) {
  if (x > 1) return bessel_k_scaled_integral(x, order);
  const double q = x * x / 4, log_term = log(x) + kEulerGammaMinusLog2;
  double term = 1, i0 = 1, harmonic = 0, k0_sum = 0, k1_sum = 0, i1_term = x / 2, i1 = x / 2;
  for (int k = 1; k < 40; ++k) {
    term *= q / (static_cast<double>(k) * k);
    harmonic += 1.0 / k;
    i0 += term;
    k0_sum += harmonic * term;
    k1_sum += harmonic * term * k * 2 / x;
    i1_term *= q / (static_cast<double>(k) * (k + 1));
    i1 += i1_term;
    if (term < 1e-18) break;
  }
  const double k = order == 0 ? -log_term * i0 + k0_sum : i0 / x + log_term * i1 - k1_sum;
  return k * exp(x);
}

// K0 and K1: inf at 0, NaN below, 0 once e^-x underflows.
TD_INLINE double modified_bessel_k(double x, int order, bool scaled) {
  if (x != x) return x;
  if (x < 0) return kNaN;
  if (x == 0) return kInf;
  if (x == kInf) return 0;
  if (scaled) return bessel_k_scaled(x, order);
  if (x > 750) return 0;
  if (x <= 1) return bessel_k_scaled(x, order) * exp(-x);
  return bessel_k_scaled_integral(x, order) * exp(-x);
}
TD_INLINE double modified_bessel_k0(double x) { return modified_bessel_k(x, 0, false); }
TD_INLINE double modified_bessel_k1(double x) { return modified_bessel_k(x, 1, false); }
TD_INLINE double scaled_modified_bessel_k0(double x) { return modified_bessel_k(x, 0, true); }
TD_INLINE double scaled_modified_bessel_k1(double x) { return modified_bessel_k(x, 1, true); }

// sin(x) / x: 1 at 0, 0 at the infinities (as PyTorch's).
TD_INLINE double spherical_bessel_j0(double x) {
  if (x != x) return x;
  if (x == 0) return 1;
  if (x == kInf || x == -kInf) return 0;
  return sin(x) / x;
}

// J_nu(z) and J_{nu+1}(z) for 0 < nu < 1 and 0 < z <= 25 by Miller's method, scaled by Gegenbauer's
// identity (z/2)^nu = Gamma(nu + 1) sum_{k>=0} c_k J_{nu+2k}(z), c_k = (nu + 2k) Gamma(nu + k) /
// (k! Gamma(nu + 1)); gamma_nu1 is Gamma(nu + 1).
TD_INLINE void bessel_j_fractional(double z, double nu, double gamma_nu1, double& j, double& j_next) {
  const int top = 2 * static_cast<int>((z + 20 + 3 * sqrt(z + 1)) / 2) + 2;
  double g = 1 / nu;  // Gamma(nu + k) / (k! Gamma(nu + 1)), carried from k = top / 2 down to 0
  for (int k = 1; k <= top / 2; ++k) g *= (nu + k - 1) / k;
  double above = 0, current = 1e-300, sum = 0;
  for (int m = top; m >= 1; --m) {
    if (m % 2 == 0) {
      const int k = m / 2;
      sum += (nu + m) * g * current;
      g *= k / (nu + k - 1);
    }
    const double below = 2 * (nu + m) / z * current - above;
    above = current;
    current = below;
    if ((current < 0 ? -current : current) > 1e250) {
      current *= 1e-250;
      above *= 1e-250;
      sum *= 1e-250;
    }
  }
  sum += current;  // c_0 = nu Gamma(nu) / Gamma(nu + 1) = 1
  const double scale = pow(z / 2, nu) / (gamma_nu1 * sum);
  j = current * scale;
  j_next = above * scale;
}

// The Airy function Ai. For |x| <= 1 its Maclaurin series Ai(0) f(x) + Ai'(0) g(x), f and g the
// solutions of y'' = x y with f(0) = 1, f'(0) = 0 and g(0) = 0, g'(0) = 1. Beyond, through Bessel
// functions of order 1/3 at zeta = (2/3) |x|^(3/2):
//   Ai(x) = sqrt(x / 3) K_{1/3}(zeta) / pi,  Ai(-x) = sqrt(x) (J_{1/3}(zeta) + J_{-1/3}(zeta)) / 3,
// J_{-1/3} = (4 / (3 zeta)) J_{2/3} - J_{5/3} by the recurrence. Hankel's expansions once zeta > 25.
// NaN at the infinities, as PyTorch's (the limits are 0); 0 once e^-zeta underflows.
TD_INLINE double airy_ai(double x) {
  if (x != x) return x;
  if (x == kInf || x == -kInf) return kNaN;
  const double ai0 = 0.35502805388781723926, ai0_slope = -0.25881940379280679840;
  const double ax = x < 0 ? -x : x;
  if (ax <= 1) {
    const double cube = x * x * x;
    double f_term = 1, g_term = x, f = 1, g = x;
    for (int k = 1; k < 30; ++k) {
      f_term *= cube / ((3.0 * k - 1) * (3.0 * k));
      g_term *= cube / ((3.0 * k) * (3.0 * k + 1));
      f += f_term;
      g += g_term;
      if ((f_term < 0 ? -f_term : f_term) < 1e-18 && (g_term < 0 ? -g_term : g_term) < 1e-18) break;
    }
    return ai0 * f + ai0_slope * g;
  }
  const double zeta = 2.0 / 3 * ax * sqrt(ax);
  if (x > 0) {
    if (zeta > 800) return 0;
    return sqrt(x / 3) / kPi * bessel_k_scaled_integral(zeta, 1.0 / 3) * exp(-zeta);
  }
  double j_third, j_minus_third;
  if (zeta <= 25) {
    const double gamma_4_3 = 0.89297951156924921122, gamma_5_3 = 0.90274529295093361130;
    double j_four_thirds, j_two_thirds, j_five_thirds;
    bessel_j_fractional(zeta, 1.0 / 3, gamma_4_3, j_third, j_four_thirds);
    bessel_j_fractional(zeta, 2.0 / 3, gamma_5_3, j_two_thirds, j_five_thirds);
    j_minus_third = 4 / (3 * zeta) * j_two_thirds - j_five_thirds;
  } else {
    double unused;
    bessel_hankel(zeta, 1.0 / 3, j_third, unused);
    bessel_hankel(zeta, -1.0 / 3, j_minus_third, unused);
  }
  return sqrt(ax) * (j_third + j_minus_third) / 3;
}

}  // namespace tandem::fn::special
