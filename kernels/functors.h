// The element-wise math of tandem, written once for the CPU loops and the CUDA kernels.
// Each functor works on the op-math type (float for float16/bfloat16, the dtype itself otherwise).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/convert.h"
#include "core/macros.h"
#include "kernels/bessel.h"
#include "kernels/polynomials.h"
#include "kernels/special.h"

namespace tandem::fn {

// The type a functor computes in for operands of type T: opmath_t<T> (float for the 16-bit
// floats), or double for the functors that declare `using math = double;` (the special
// functions). Those results are rounded once to T: through float, a float16 result would be off
// by one in about 1 of 8000 values.
template <typename F, typename T>
struct MathOf {
  using type = opmath_t<T>;
};
template <typename F, typename T>
  requires requires { typename F::math; }
struct MathOf<F, T> {
  using type = typename F::math;
};
template <typename F, typename T>
using math_t = typename MathOf<F, T>::type;

// Overloads that pick the float or double function on the host and in CUDA device code.
namespace math {
#if defined(__CUDA_ARCH__)
#define TD_MATH1(name, f32, f64) \
  TD_INLINE float name(float x) { return ::f32(x); } \
  TD_INLINE double name(double x) { return ::f64(x); }
#else
#define TD_MATH1(name, f32, f64) \
  inline float name(float x) { return std::name(x); } \
  inline double name(double x) { return std::name(x); }
#endif
TD_MATH1(log, logf, log)
TD_MATH1(log1p, log1pf, log1p)
TD_MATH1(expm1, expm1f, expm1)
TD_MATH1(sqrt, sqrtf, sqrt)
TD_MATH1(sin, sinf, sin)
TD_MATH1(cos, cosf, cos)
TD_MATH1(tanh, tanhf, tanh)
TD_MATH1(erf, erff, erf)
TD_MATH1(fabs, fabsf, fabs)
TD_MATH1(floor, floorf, floor)
TD_MATH1(ceil, ceilf, ceil)
TD_MATH1(trunc, truncf, trunc)
TD_MATH1(nearbyint, nearbyintf, nearbyint)
TD_MATH1(tan, tanf, tan)
TD_MATH1(asin, asinf, asin)
TD_MATH1(acos, acosf, acos)
TD_MATH1(atan, atanf, atan)
TD_MATH1(sinh, sinhf, sinh)
TD_MATH1(cosh, coshf, cosh)
TD_MATH1(asinh, asinhf, asinh)
TD_MATH1(acosh, acoshf, acosh)
TD_MATH1(atanh, atanhf, atanh)
TD_MATH1(log2, log2f, log2)
TD_MATH1(log10, log10f, log10)
TD_MATH1(exp2, exp2f, exp2)
TD_MATH1(erfc, erfcf, erfc)
#undef TD_MATH1

#if defined(__CUDA_ARCH__)
#define TD_MATH2(name, f32, f64) \
  TD_INLINE float name(float a, float b) { return ::f32(a, b); } \
  TD_INLINE double name(double a, double b) { return ::f64(a, b); }
#else
#define TD_MATH2(name, f32, f64) \
  inline float name(float a, float b) { return std::name(a, b); } \
  inline double name(double a, double b) { return std::name(a, b); }
#endif
TD_MATH2(atan2, atan2f, atan2)
TD_MATH2(hypot, hypotf, hypot)
TD_MATH2(fmod, fmodf, fmod)
TD_MATH2(copysign, copysignf, copysign)
TD_MATH2(nextafter, nextafterf, nextafter)
#undef TD_MATH2

#if defined(__CUDA_ARCH__)
TD_INLINE bool signbit(float x) { return ::signbit(x); }
TD_INLINE bool signbit(double x) { return ::signbit(x); }
#else
inline bool signbit(float x) { return std::signbit(x); }
inline bool signbit(double x) { return std::signbit(x); }
#endif

// Fused multiply-add, rounded once: the same result on the host (FMA instructions, x86-64-v3) and
// on a GPU, where a * b + c written out may be fused or not at each compiler's choice.
#if defined(__CUDA_ARCH__)
TD_INLINE float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
TD_INLINE double fma(double a, double b, double c) { return ::fma(a, b, c); }
#else
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline double fma(double a, double b, double c) { return std::fma(a, b, c); }
#endif

// A product rounded on its own, never fused into a sum that takes it, for lines that are two ops
// in the op-by-op form. nvcc fuses a * b + c on a GPU unless told not to. On the host, GCC fuses
// it too (x86-64-v3 has FMA; it does so by default even in ISO C++ mode, and in vectorized loops
// __builtin_assoc_barrier does not stop it), so the host files that run these functors are built
// with -ffp-contract=off (kernels/BUILD: optim_arithmetic).
#if defined(__CUDA_ARCH__)
TD_INLINE float unfused_mul(float a, float b) { return __fmul_rn(a, b); }
TD_INLINE double unfused_mul(double a, double b) { return __dmul_rn(a, b); }
#else
inline float unfused_mul(float a, float b) { return a * b; }
inline double unfused_mul(double a, double b) { return a * b; }
#endif

#if defined(__CUDA_ARCH__)
TD_INLINE float pow(float a, float b) { return ::powf(a, b); }
TD_INLINE double pow(double a, double b) { return ::pow(a, b); }
#else
inline float pow(float a, float b) { return std::pow(a, b); }
inline double pow(double a, double b) { return std::pow(a, b); }
#endif
}  // namespace math

// exp for float without branches or tables, so loops over it vectorize: x = n ln2 + r with
// |r| <= ln2 / 2 (ln2 split in two for an exact product), exp(r) by Cephes' degree-6 polynomial
// (about 1 ulp), times 2^n built in two halves so subnormal results and overflow come out right.
// Every product that meets a sum is an explicit fma, so the CPU and the GPU (which use it too)
// round alike and agree bit for bit.
TD_INLINE float exp_float(float x) {
  const float lo = -104.0f, hi = 88.8f;  // exp(lo) rounds to 0, exp(hi) to inf
  float c = x < lo ? lo : x;
  c = c > hi ? hi : c;
  const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float n = math::fma(c, 1.44269504088896341f, shift) - shift;
  float r = math::fma(n, -0.693359375f, c);
  r = math::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = math::fma(p, r, 1.3981999507e-3f);
  p = math::fma(p, r, 8.3334519073e-3f);
  p = math::fma(p, r, 4.1665795894e-2f);
  p = math::fma(p, r, 1.6666665459e-1f);
  p = math::fma(p, r, 5.0000001201e-1f);
  const float r2 = r * r;
  float y = math::fma(p, r2, r) + 1.0f;
  int ni = static_cast<int>(n);
  int half = ni / 2;
  float s1, s2;
  uint32_t b1 = static_cast<uint32_t>(half + 127) << 23, b2 = static_cast<uint32_t>(ni - half + 127) << 23;
  memcpy(&s1, &b1, sizeof s1);
  memcpy(&s2, &b2, sizeof s2);
  float result = y * s1 * s2;
  return x != x ? x : result;
}

namespace math {
TD_INLINE float exp(float x) { return exp_float(x); }
#if defined(__CUDA_ARCH__)
TD_INLINE double exp(double x) { return ::exp(x); }
#else
inline double exp(double x) { return std::exp(x); }
#endif
}  // namespace math

template <typename T>
TD_INLINE bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// The order of max and min: -0 below +0, as in IEEE 754-2019's maximum and minimum. Without it,
// which of two equal zeros a fold returns would depend on the order it meets them in, and the CPU's
// lanes and the GPU's threads meet them in different orders. Equal values of different signs are zeros.
template <typename T>
TD_INLINE bool above(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return x > y || (x == y && math::signbit(y) && !math::signbit(x));
  } else {
    return x > y;
  }
}

// Integer arithmetic happens in this unsigned type, at least as wide as int (narrow types
// compute as int), where results wrap as PyTorch's do; in the signed type they would overflow,
// which is undefined.
template <typename T>
using wrapping_t = std::make_unsigned_t<std::conditional_t<(sizeof(T) < sizeof(int)), int, T>>;

// a * b, wrapping for integers.
template <typename T>
TD_INLINE T product(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<T>) {
    using U = wrapping_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return static_cast<T>(a * b);
  }
}

// a + b and a - b, wrapping for integers (bool's sum is its or).
template <typename T>
TD_INLINE T sum(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrapping_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
TD_INLINE T difference(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = wrapping_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}

// ---- unary ----
// Signed integers negate in their unsigned twin, where the most negative value wraps to itself
// (as PyTorch's results show) instead of overflowing, which is undefined.
template <typename T>
TD_INLINE T negated(T x) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));
  } else {
    return static_cast<T>(-x);
  }
}
struct Neg {
  template <typename T> TD_INLINE T operator()(T x) const { return negated(x); }
};
struct Abs {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return math::fabs(x);
    } else if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < 0 ? negated(x) : x;
    }
  }
};
struct Exp {
  template <typename T> TD_INLINE T operator()(T x) const { return math::exp(x); }
};
struct Expm1 {  // exp(x) - 1 without the cancellation near 0
  template <typename T> TD_INLINE T operator()(T x) const { return math::expm1(x); }
};
struct Log {
  template <typename T> TD_INLINE T operator()(T x) const { return math::log(x); }
};
struct Log1p {
  template <typename T> TD_INLINE T operator()(T x) const { return math::log1p(x); }
};
struct Sqrt {
  template <typename T> TD_INLINE T operator()(T x) const { return math::sqrt(x); }
};
struct Rsqrt {
  template <typename T> TD_INLINE T operator()(T x) const { return T(1) / math::sqrt(x); }
};
struct Sin {
  template <typename T> TD_INLINE T operator()(T x) const { return math::sin(x); }
};
struct Cos {
  template <typename T> TD_INLINE T operator()(T x) const { return math::cos(x); }
};
struct Tanh {
  template <typename T> TD_INLINE T operator()(T x) const { return math::tanh(x); }
};
struct Erf {
  template <typename T> TD_INLINE T operator()(T x) const { return math::erf(x); }
};
struct Sigmoid {
  template <typename T> TD_INLINE T operator()(T x) const { return T(1) / (T(1) + math::exp(-x)); }
};
struct Relu {  // NaN stays NaN, as in PyTorch
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else {
      return x < T(0) ? T(0) : x;
    }
  }
};
struct GeluErf {  // x * Phi(x)
  template <typename T> TD_INLINE T operator()(T x) const {
    return T(0.5) * x * (T(1) + math::erf(x * T(0.70710678118654752440)));
  }
};
struct GeluTanh {  // the tanh approximation, PyTorch's approximate="tanh"
  template <typename T> TD_INLINE T operator()(T x) const {
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + math::tanh(inner));
  }
};
struct Silu {
  template <typename T> TD_INLINE T operator()(T x) const { return x / (T(1) + math::exp(-x)); }
};
struct Sign {  // NaN gives 0, as in PyTorch
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(T(0) < x);
    } else {
      return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
    }
  }
};
struct Reciprocal {
  template <typename T> TD_INLINE T operator()(T x) const { return T(1) / x; }
};
// Rounding to a whole number: integers are whole already. Round goes to the nearest, halves to
// the even one (the default rounding mode), as PyTorch's round.
struct Floor {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::floor(x); else return x;
  }
};
struct Ceil {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::ceil(x); else return x;
  }
};
struct Round {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::nearbyint(x); else return x;
  }
};
struct Trunc {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return math::trunc(x); else return x;
  }
};
struct Frac {  // x - trunc(x): the sign of x, exact
  template <typename T> TD_INLINE T operator()(T x) const { return x - math::trunc(x); }
};

// Trigonometric, hyperbolic and their inverses; logarithms and powers of 2 and 10; erfc.
#define TD_UNARY_MATH(Name, f) \
  struct Name { \
    template <typename T> TD_INLINE T operator()(T x) const { return math::f(x); } \
  };
TD_UNARY_MATH(Tan, tan)
TD_UNARY_MATH(Asin, asin)
TD_UNARY_MATH(Acos, acos)
TD_UNARY_MATH(Atan, atan)
TD_UNARY_MATH(Sinh, sinh)
TD_UNARY_MATH(Cosh, cosh)
TD_UNARY_MATH(Asinh, asinh)
TD_UNARY_MATH(Acosh, acosh)
TD_UNARY_MATH(Atanh, atanh)
TD_UNARY_MATH(Log2, log2)
TD_UNARY_MATH(Log10, log10)
TD_UNARY_MATH(Exp2, exp2)
TD_UNARY_MATH(Erfc, erfc)
#undef TD_UNARY_MATH

// The inverse of erf, the same on both backends: a first guess within 2e-3 (Winitzki's closed
// form), then two Halley steps, each of which cubes the relative error. Past 0.5 the residual
// erf(x) - z is taken as (1 - z) - erfc(x), exact where erf(x) is within rounding of 1.
struct Erfinv {
  template <typename T> TD_INLINE T operator()(T y) const {
    if (!(y > T(-1) && y < T(1))) {
      if (y == T(1)) return std::numeric_limits<T>::infinity();
      if (y == T(-1)) return -std::numeric_limits<T>::infinity();
      return std::numeric_limits<T>::quiet_NaN();  // outside [-1, 1], or NaN itself
    }
    const T z = math::fabs(y);
    const T a = T(0.147), two_over_pi_a = T(2 / (3.14159265358979323846 * 0.147));
    const T log_term = math::log1p(-z * z);
    const T first = two_over_pi_a + log_term / T(2);
    T x = math::sqrt(math::sqrt(first * first - log_term / a) - first);
    const T two_over_sqrt_pi = T(1.12837916709551257390);
    for (int step = 0; step < 2; ++step) {
      const T residual = z <= T(0.5) ? math::erf(x) - z : (T(1) - z) - math::erfc(x);
      const T ratio = residual / (two_over_sqrt_pi * math::exp(-x * x));
      x -= ratio / (T(1) + x * ratio);
    }
    return math::copysign(x, y);  // -0 too
  }
};

// The special functions of kernels/special.h, computed in double for every floating dtype.
#define TD_UNARY_SPECIAL(Name, f) \
  struct Name { \
    using math = double; \
    template <typename T> TD_INLINE T operator()(T x) const { \
      return convert<T>(special::f(static_cast<double>(x))); \
    } \
  };
TD_UNARY_SPECIAL(Lgamma, lgamma)
TD_UNARY_SPECIAL(Digamma, digamma)
TD_UNARY_SPECIAL(Erfcx, erfcx)
TD_UNARY_SPECIAL(I0, bessel_i0)
TD_UNARY_SPECIAL(I0e, bessel_i0e)
TD_UNARY_SPECIAL(I1, bessel_i1)
TD_UNARY_SPECIAL(I1e, bessel_i1e)
TD_UNARY_SPECIAL(Ndtri, ndtri)
TD_UNARY_SPECIAL(BesselJ0, bessel_j0)
TD_UNARY_SPECIAL(BesselJ1, bessel_j1)
TD_UNARY_SPECIAL(BesselY0, bessel_y0)
TD_UNARY_SPECIAL(BesselY1, bessel_y1)
TD_UNARY_SPECIAL(ModifiedBesselI0, bessel_i0)
TD_UNARY_SPECIAL(ModifiedBesselI1, bessel_i1)
TD_UNARY_SPECIAL(ModifiedBesselK0, modified_bessel_k0)
TD_UNARY_SPECIAL(ModifiedBesselK1, modified_bessel_k1)
TD_UNARY_SPECIAL(ScaledModifiedBesselK0, scaled_modified_bessel_k0)
TD_UNARY_SPECIAL(ScaledModifiedBesselK1, scaled_modified_bessel_k1)
TD_UNARY_SPECIAL(SphericalBesselJ0, spherical_bessel_j0)
TD_UNARY_SPECIAL(AiryAi, airy_ai)
#undef TD_UNARY_SPECIAL

// ~x for integers, not x for bool.
struct BitwiseNot {
  template <typename T> TD_INLINE T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x; else return static_cast<T>(~x);
  }
};

// ---- binary ----
struct Add {
  template <typename T> TD_INLINE T operator()(T a, T b) const { return sum(a, b); }
};
struct Sub {
  template <typename T> TD_INLINE T operator()(T a, T b) const { return difference(a, b); }
};
template <typename T>
struct AddScaled {  // a + alpha * b
  T alpha;
  TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return sum(a, product(alpha, b));
    } else {
      return static_cast<T>(a + alpha * b);
    }
  }
};
struct Mul {
  template <typename T> TD_INLINE T operator()(T a, T b) const { return product(a, b); }
};
template <typename M, typename F>
struct WithScalar {  // f(x, value): a binary op whose second operand is one number, held in M
  M value;
  TD_INLINE M operator()(M x) const { return F{}(x, value); }
};
struct Div {
  template <typename T> TD_INLINE T operator()(T a, T b) const { return a / b; }
};
struct Pow {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return math::pow(a, b);
    } else {
      // Integer power by squaring; a negative exponent gives 1/a^n truncated, as PyTorch does.
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? T(-1) : T(1);
          return 0;
        }
      }
      // Products in the unsigned twin wrap as PyTorch's results do, where signed ones would
      // overflow (undefined); `a` is squared only while bits of b are left, so a power that fits
      // never overflows on the way.
      using U = std::make_unsigned_t<T>;
      U result = 1, base = static_cast<U>(a);
      for (;;) {
        if (b & 1) result = static_cast<U>(result * base);
        b = static_cast<T>(b >> 1);
        if (!b) break;
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    }
  }
};
// Division rounded toward zero (div's rounding_mode "trunc"). Integer division by zero is refused
// before any kernel runs; the guard only keeps the kernel itself defined. The most negative integer
// divided by -1 wraps to itself, as its negation does.
struct DivTrunc {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return math::trunc(a / b);
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return negated(a);
      }
      return static_cast<T>(a / b);
    }
  }
};

// Division rounded toward -inf (floor_divide, rounding_mode "floor"), as Python's //: for floats the
// quotient of a minus its remainder, which is exact, then rounded to the nearest whole number.
struct DivFloor {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (b == T(0)) return a / b;
      const T mod = math::fmod(a, b);
      T quotient = (a - mod) / b;
      if (mod != T(0) && (b < T(0)) != (mod < T(0))) quotient -= T(1);
      if (quotient == T(0)) return math::copysign(T(0), a / b);
      T whole = math::floor(quotient);
      if (quotient - whole > T(0.5)) whole += T(1);
      return whole;
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return negated(a);
        const T q = static_cast<T>(a / b);
        return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    }
  }
};

// The remainder with the divisor's sign (Python's %, torch.remainder) and with the dividend's
// (C's fmod, torch.fmod).
struct Remainder {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      T mod = math::fmod(a, b);
      if (mod != T(0) && (b < T(0)) != (mod < T(0))) mod += b;
      return mod;
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
        const T mod = static_cast<T>(a % b);
        return (mod != 0 && ((mod < 0) != (b < 0))) ? static_cast<T>(mod + b) : mod;
      } else {
        return static_cast<T>(a % b);
      }
    }
  }
};
struct Fmod {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return math::fmod(a, b);
    } else {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
      }
      return static_cast<T>(a % b);
    }
  }
};

struct Atan2 {
  template <typename T> TD_INLINE T operator()(T a, T b) const { return math::atan2(a, b); }
};
struct Hypot {  // sqrt(a^2 + b^2) without overflow or underflow on the way
  template <typename T> TD_INLINE T operator()(T a, T b) const { return math::hypot(a, b); }
};
struct Copysign {  // |a| with the sign of b (of a NaN or a zero too)
  template <typename T> TD_INLINE T operator()(T a, T b) const { return math::copysign(a, b); }
};
// log(exp(a) + exp(b)) without overflow: the larger plus log1p of the smaller's share; two equal
// infinities give themselves (their difference would be NaN).
struct LogAddExp {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if (a == b && math::fabs(a) == std::numeric_limits<T>::infinity()) return a;
    const T larger = a > b ? a : b;
    const T gap = math::fabs(a - b);
    if (gap != gap) return gap;  // a NaN operand
    return larger + math::log1p(math::exp(-gap));
  }
};

struct Zeta {
  using math = double;  // the Hurwitz zeta function of a at b, in double
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    return convert<T>(special::zeta(static_cast<double>(a), static_cast<double>(b)));
  }
};

// The regularized lower and upper incomplete gamma functions P(a, b) and Q(a, b), in double.
struct Igamma {
  using math = double;
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    return convert<T>(special::incomplete_gamma(static_cast<double>(a), static_cast<double>(b), false));
  }
};
// An orthogonal polynomial of x of degree n, in double; the shifted ones at 2x - 1.
template <special::Polynomial kind, bool shifted = false>
struct OrthogonalPolynomial {
  using math = double;
  template <typename T> TD_INLINE T operator()(T x, T n) const {
    const double at = shifted ? 2 * static_cast<double>(x) - 1 : static_cast<double>(x);
    return convert<T>(special::orthogonal_polynomial(kind, at, static_cast<double>(n)));
  }
};

struct Igammac {
  using math = double;
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    return convert<T>(special::incomplete_gamma(static_cast<double>(a), static_cast<double>(b), true));
  }
};
// d x / d alpha of a Gamma(alpha, 1) draw x (alpha, x), in double.
struct StandardGammaGrad {
  using math = double;
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    return convert<T>(special::standard_gamma_grad(static_cast<double>(a), static_cast<double>(b)));
  }
};

struct BitwiseAnd {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b; else return static_cast<T>(a & b);
  }
};
struct BitwiseOr {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b; else return static_cast<T>(a | b);
  }
};
struct BitwiseXor {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a != b; else return static_cast<T>(a ^ b);
  }
};

// |a| in T's unsigned type (the lowest signed value's magnitude too).
template <typename T>
TD_INLINE std::make_unsigned_t<T> magnitude(T a) {
  using U = std::make_unsigned_t<T>;
  if constexpr (std::is_signed_v<T>) {
    return a < 0 ? static_cast<U>(U{0} - static_cast<U>(a)) : static_cast<U>(a);
  } else {
    return a;
  }
}
// v < 0, false for an unsigned type without the compiler's warning that it always is.
template <typename T>
TD_INLINE bool negative(T v) {
  if constexpr (std::is_signed_v<T>) return v < 0; else return false;
}

// a shifted by b bits, as PyTorch's integer shifts: a shift outside [0, bits) leaves no bits (0) to
// the left, and only the sign (0 or -1) to the right; inside it, the left shift wraps as unsigned.
struct ShiftLeft {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a;  // refused before a kernel runs (kernels/elementwise.cc)
    } else {
      using U = std::make_unsigned_t<T>;
      if (negative(b) || static_cast<uint64_t>(b) >= sizeof(T) * 8) return T(0);
      return static_cast<T>(static_cast<U>(static_cast<U>(a) << b));
    }
  }
};
struct ShiftRight {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a;
    } else {
      if (negative(b) || static_cast<uint64_t>(b) >= sizeof(T) * 8) return negative(a) ? T(-1) : T(0);
      return static_cast<T>(a >> b);
    }
  }
};

struct Gcd {  // of |a| and |b| (Euclid's), for integers
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a || b;
    } else {
      auto x = magnitude(a), y = magnitude(b);
      while (y != 0) {
        const auto r = static_cast<decltype(x)>(x % y);
        x = y;
        y = r;
      }
      return static_cast<T>(x);
    }
  }
};
struct Lcm {  // |a b| / gcd(a, b), 0 where either is 0; wraps as PyTorch's where it overflows
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else {
      const auto g = magnitude(Gcd{}(a, b));
      if (g == 0) return T(0);
      return static_cast<T>(static_cast<decltype(g)>(magnitude(a) / g * magnitude(b)));
    }
  }
};
struct Nextafter {  // the next representable value after a toward b
  template <typename T> TD_INLINE T operator()(T a, T b) const { return math::nextafter(a, b); }
};

struct Maximum {  // NaN propagates
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return above(b, a) ? b : a;
  }
};
struct Minimum {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return above(a, b) ? b : a;
  }
};
// Whether a running maximum (or minimum) moves to x: NaN always takes over and then stays; of equal
// values the latest is taken, as PyTorch's cummax and cummin.
struct TakesRunningMax {
  template <typename T>
  TD_INLINE bool operator()(T x, T best) const {
    return is_nan(x) || (!is_nan(best) && x >= best);
  }
};
struct TakesRunningMin {
  template <typename T>
  TD_INLINE bool operator()(T x, T best) const {
    return is_nan(x) || (!is_nan(best) && x <= best);
  }
};

// fmax and fmin: a NaN operand gives way to the other (NaN only when both are).
struct Fmax {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if (is_nan(a)) return b;
    if (is_nan(b)) return a;
    return above(b, a) ? b : a;
  }
};
struct Fmin {
  template <typename T> TD_INLINE T operator()(T a, T b) const {
    if (is_nan(a)) return b;
    if (is_nan(b)) return a;
    return above(a, b) ? b : a;
  }
};
struct Eq {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a == b; }
};
struct Ne {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a != b; }
};
struct Lt {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a < b; }
};
struct Le {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a <= b; }
};
struct Gt {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a > b; }
};
struct Ge {
  template <typename T> TD_INLINE bool operator()(T a, T b) const { return a >= b; }
};

// clamp(x, lo, hi) = min(max(x, lo), hi); NaN propagates, and lo > hi gives hi, as in PyTorch.
template <typename T>
struct Clamp {
  T lo, hi;
  bool has_lo, has_hi;
  TD_INLINE T operator()(T x) const {
    if (is_nan(x)) return x;
    if (has_lo && is_nan(lo)) return lo;
    if (has_hi && is_nan(hi)) return hi;
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
};

// ---- optimizer steps (kernels/optim.h) ----
// One element of a step, in op-math M, with the roundings of the op-by-op form in nn/optim: each
// line below is one op there (a + alpha * b is one op, as add(b, alpha): an explicit fma, rounded
// once, so that the CPU and the GPU round each line alike).

template <typename M>
struct SgdUpdate {
  M lr, momentum, dampening_complement, weight_decay;  // dampening_complement: 1 - dampening
  // has_weight_decay: the option is nonzero as a double, as nn/optim decides (it may round to 0 in M).
  bool has_weight_decay, has_momentum, nesterov, first, maximize;
  TD_INLINE void operator()(M& p, M g, M& buf) const {
    if (maximize) g = -g;
    if (has_weight_decay) g = math::fma(weight_decay, p, g);
    if (has_momentum) {
      if (first) {
        buf = g;
      } else {
        buf = buf * momentum;
        buf = math::fma(dampening_complement, g, buf);
      }
      g = nesterov ? math::fma(momentum, buf, g) : buf;
    }
    p = math::fma(-lr, g, p);
  }
};

template <typename M>
struct AdamUpdate {
  M decay;          // decoupled weight decay: 1 - lr * weight_decay
  M weight_decay;   // coupled weight decay, added to the gradient
  M lerp_alpha;     // torch.lerp toward g by w = 1 - beta1: m + w (g - m), or for |w| >= 0.5, g - (1 - w)(g - m)
  bool lerp_from_start;
  M beta2, one_minus_beta2, step_size, bias_correction2_sqrt, eps;
  bool has_weight_decay, decoupled, amsgrad, maximize;  // has_weight_decay: as SgdUpdate's
  TD_INLINE void operator()(M& p, M g, M& m, M& v, M* v_max) const {
    if (maximize) g = -g;
    if (decoupled) {
      if (has_weight_decay) p = math::unfused_mul(p, decay);  // its own op, before the step's add
    } else if (has_weight_decay) {
      g = math::fma(weight_decay, p, g);
    }
    const M diff = g - m;
    m = math::fma(lerp_alpha, diff, lerp_from_start ? m : g);
    // mul_(beta2), then addcmul's (value * g) times g added in one fused multiply-add.
    v = math::fma(math::unfused_mul(g, one_minus_beta2), g, math::unfused_mul(v, beta2));
    M second = v;
    if (amsgrad) {
      *v_max = Maximum{}(*v_max, v);
      second = *v_max;
    }
    const M denom = math::sqrt(second) / bias_correction2_sqrt + eps;
    p = p + (m * (-step_size)) / denom;
  }
};

// self + (value * a) * b as PyTorch's addcmul_ (its vectorised CPU kernel): the scaled factor
// rounded, then one fused multiply-add.
template <typename T, typename M>
struct AddCMul {
  M value;
  TD_INLINE T operator()(T self, T a, T b) const {
    return static_cast<T>(math::fma(math::unfused_mul(value, static_cast<M>(a)), static_cast<M>(b), static_cast<M>(self)));
  }
};

// Dropout and its gradient: x * keep * scale, rounded as the op-by-op product x * mask * scale
// (x * keep is exact in T, so its NaN and signed zeros are the product's).
template <typename T, typename M>
struct KeepScale {
  M scale;
  TD_INLINE T operator()(T x, uint8_t keep) const {
    const T kept = static_cast<T>(static_cast<M>(x) * (keep != 0 ? M(1) : M(0)));
    return static_cast<T>(static_cast<M>(kept) * scale);
  }
};

}  // namespace tandem::fn
