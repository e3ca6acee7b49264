// Half (IEEE binary16) and BFloat16 storage types with exact round-to-nearest-even conversion.
// Arithmetic happens in float: both convert implicitly to and from float, on the host and in CUDA.
// On the host, float16 converts with the CPU's F16C instructions (x86-64-v3 has them), four times
// faster than the bit manipulation below, which GPU code uses and which gives the same results
// (tests/core/half_test.cc compares them; F16C makes a signalling NaN quiet, as CUDA does not).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/macros.h"

#if defined(__F16C__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define TD_HALF_F16C 1
#endif

namespace tandem {

namespace detail {

TD_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

TD_INLINE float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `value` right by `shift` bits, ties to even.
TD_INLINE uint32_t shift_round_even(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t rest = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
}

TD_INLINE uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf, or NaN kept quiet with its top payload bits
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
  }
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {  // normal half: rebias the exponent, round 13 mantissa bits away
    return static_cast<uint16_t>(sign | shift_round_even(ax - (112u << 23), 13));
  }
  uint32_t exponent = ax >> 23;
  if (exponent < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
  // subnormal half m * 2^-24: the 24-bit significand shifted by (126 - exponent), in [14, 24]
  uint32_t significand = (ax & 0x7fffffu) | 0x800000u;
  return static_cast<uint16_t>(sign | shift_round_even(significand, 126 - static_cast<int>(exponent)));
}

TD_INLINE float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

TD_INLINE uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>(shift_round_even(x, 16));  // carries into the exponent, up to inf
}

TD_INLINE float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// double to float rounding toward zero, then setting the last bit if anything was lost
// ("round to odd"): a second rounding of that float to half or bfloat16 is then exactly the
// round-to-nearest-even of the double, with no double-rounding error.
TD_INLINE float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || d != d) return f;
  uint32_t u = float_bits(f);
  double af = static_cast<double>(f) < 0 ? -static_cast<double>(f) : static_cast<double>(f);
  double ad = d < 0 ? -d : d;
  if (af > ad) u -= 1;  // rounded away from zero (inf included): step back toward zero
  return bits_float(u | 1u);
}

}  // namespace detail

struct Half {
  uint16_t bits = 0;

  Half() = default;
#ifdef TD_HALF_F16C
  TD_INLINE Half(float value) : bits(static_cast<uint16_t>(_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT))) {}
  TD_INLINE operator float() const { return _cvtsh_ss(bits); }
#else
  TD_INLINE Half(float value) : bits(detail::float_to_half_bits(value)) {}
  TD_INLINE operator float() const { return detail::half_bits_to_float(bits); }
#endif
  TD_INLINE static Half from_double(double value) {
    return Half(detail::double_to_float_round_odd(value));
  }
  TD_INLINE static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  TD_INLINE BFloat16(float value) : bits(detail::float_to_bfloat16_bits(value)) {}
  TD_INLINE operator float() const { return detail::bfloat16_bits_to_float(bits); }
  TD_INLINE static BFloat16 from_double(double value) {
    return BFloat16(detail::double_to_float_round_odd(value));
  }
  TD_INLINE static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace tandem
