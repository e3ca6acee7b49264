// float16 and bfloat16 conversions, checked exhaustively over all 65536 bit patterns against an
// independent reference: the value each pattern encodes (computed with ldexp), and the rounding
// of floats at, just below and just above every midpoint between neighbours.
#include <cmath>
#include <cstring>

#include "tests/testing.h"

namespace td = tandem;

namespace {

// The value an IEEE binary16 pattern encodes, from its fields.
double half_value(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0x1f) {
    magnitude = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -24);
  } else {
    magnitude = std::ldexp(1024 + mantissa, exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

double bfloat16_value(uint16_t b) {
  int sign = b >> 15, exponent = (b >> 7) & 0xff, mantissa = b & 0x7f;
  double magnitude;
  if (exponent == 0xff) {
    magnitude = mantissa ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(mantissa, -133);
  } else {
    magnitude = std::ldexp(128 + mantissa, exponent - 134);
  }
  return sign ? -magnitude : magnitude;
}

float next_toward_zero(float f) { return std::nextafter(f, 0.0f); }
float next_away(float f) { return std::nextafter(f, f > 0 ? INFINITY : -INFINITY); }

template <typename T>
uint16_t bits_of(float f) {
  return T(f).bits;
}

// For each finite non-negative pattern p (and its negative), the float midway to p + 1 must
// round to whichever of the two is even, and floats beside it to the nearer one.
template <typename T>
void check_midpoints(double (*value)(uint16_t), uint16_t largest_finite) {
  int failures = 0;
  for (uint32_t p = 0; p < largest_finite; ++p) {
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      uint16_t lo = static_cast<uint16_t>(p | sign), hi = static_cast<uint16_t>((p + 1) | sign);
      float mid = static_cast<float>((value(lo) + value(hi)) / 2);  // exact: floats have the bits
      REQUIRE(static_cast<double>(mid) == (value(lo) + value(hi)) / 2);
      uint16_t even = (p & 1) ? hi : lo;
      bool ok = bits_of<T>(mid) == even && bits_of<T>(next_toward_zero(mid)) == lo && bits_of<T>(next_away(mid)) == hi;
      if (!ok && ++failures <= 5) {
        FAIL_CHECK("rounding near the midpoint of patterns " << lo << " and " << hi);
      }
    }
  }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("every float16 pattern converts to the float it encodes and back to itself", "[cpu]") {
  int failures = 0;
  for (uint32_t p = 0; p < 65536; ++p) {
    uint16_t bits = static_cast<uint16_t>(p);
    float f = td::Half::from_bits(bits);
    double expected = half_value(bits);
    bool ok;
    if (std::isnan(expected)) {
      ok = std::isnan(f) && std::isnan(static_cast<float>(td::Half(f)));  // NaN stays NaN (made quiet)
    } else {
      ok = static_cast<double>(f) == expected && td::Half(f).bits == bits && std::signbit(f) == (p >> 15 == 1);
    }
    if (!ok && ++failures <= 5) FAIL_CHECK("float16 pattern " << p);
  }
  CHECK(failures == 0);
}

TEST_CASE("the bit-level float16 conversion GPU code uses gives the host's results", "[cpu]") {
  // The host converts with F16C where the CPU has it; the cases above check that against the
  // reference. The portable conversion must agree on every pattern and on floats around every
  // midpoint, plus a sweep over all float bit patterns.
  int failures = 0;
  for (uint32_t p = 0; p < 65536; ++p) {
    const uint16_t bits = static_cast<uint16_t>(p);
    const float portable = td::detail::half_bits_to_float(bits), host = td::Half::from_bits(bits);
    const bool ok = std::isnan(host) ? std::isnan(portable)
                                     : td::detail::float_bits(portable) == td::detail::float_bits(host);
    if (!ok && ++failures <= 5) FAIL_CHECK("float16 pattern " << p << " to float");
  }
  auto check_float = [&](float f) {
    if (td::detail::float_to_half_bits(f) != td::Half(f).bits && ++failures <= 5) {
      FAIL_CHECK("float " << f << " (bits " << td::detail::float_bits(f) << ") to float16");
    }
  };
  for (uint32_t p = 0; p < 0x7c00; ++p) {
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const float mid = static_cast<float>((half_value(static_cast<uint16_t>(p | sign)) +
                                            half_value(static_cast<uint16_t>((p + 1) | sign))) / 2);
      check_float(mid);
      check_float(next_toward_zero(mid));
      check_float(next_away(mid));
    }
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) check_float(td::detail::bits_float(static_cast<uint32_t>(u)));
  CHECK(failures == 0);
}

TEST_CASE("every bfloat16 pattern converts to the float it encodes and back to itself", "[cpu]") {
  int failures = 0;
  for (uint32_t p = 0; p < 65536; ++p) {
    uint16_t bits = static_cast<uint16_t>(p);
    float f = td::BFloat16::from_bits(bits);
    double expected = bfloat16_value(bits);
    bool ok;
    if (std::isnan(expected)) {
      ok = std::isnan(f) && std::isnan(static_cast<float>(td::BFloat16(f)));
    } else {
      ok = static_cast<double>(f) == expected && td::BFloat16(f).bits == bits;
    }
    if (!ok && ++failures <= 5) FAIL_CHECK("bfloat16 pattern " << p);
  }
  CHECK(failures == 0);
}

TEST_CASE("float to float16 rounds to nearest, ties to even, at every midpoint", "[cpu]") {
  check_midpoints<td::Half>(half_value, 0x7bff);
}

TEST_CASE("float to bfloat16 rounds to nearest, ties to even, at every midpoint", "[cpu]") {
  check_midpoints<td::BFloat16>(bfloat16_value, 0x7f7f);
}

TEST_CASE("floats beyond the largest float16 round to infinity from 65520 on", "[cpu]") {
  CHECK(td::Half(65504.0f).bits == 0x7bff);
  CHECK(td::Half(65519.996f).bits == 0x7bff);
  CHECK(td::Half(65520.0f).bits == 0x7c00);
  CHECK(td::Half(-1e30f).bits == 0xfc00);
  CHECK(td::Half(INFINITY).bits == 0x7c00);
  CHECK(td::BFloat16(3.4028235e38f).bits == 0x7f80);  // rounds past the largest bfloat16
  CHECK(std::isnan(static_cast<float>(td::Half(NAN))));
  CHECK(std::isnan(static_cast<float>(td::BFloat16(-NAN))));
}

TEST_CASE("tiny floats round into float16 subnormals or to signed zero", "[cpu]") {
  const float smallest = std::ldexp(1.0f, -24);
  CHECK(td::Half(smallest).bits == 0x0001);
  CHECK(td::Half(smallest / 2).bits == 0x0000);                     // tie, to even zero
  CHECK(td::Half(next_away(smallest / 2)).bits == 0x0001);
  CHECK(td::Half(-smallest / 4).bits == 0x8000);
  CHECK(td::Half(std::ldexp(1.0f, -14)).bits == 0x0400);            // smallest normal
  CHECK(td::Half(std::ldexp(1023.5f, -24)).bits == 0x0400);         // rounds up into the normals
}

TEST_CASE("double to float16 and bfloat16 rounds once, with no double-rounding error", "[cpu]") {
  // 1 + 2^-11 is the midpoint between float16 1.0 and its successor; a double a hair above it
  // must round up, although rounding it to float first would land exactly on the midpoint.
  const double above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const double below = 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  CHECK(static_cast<double>(static_cast<float>(above)) == 1.0 + std::ldexp(1.0, -11));  // the trap is real
  CHECK(td::Half::from_double(above).bits == 0x3c01);
  CHECK(td::Half::from_double(below).bits == 0x3c00);
  const double bf_above = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  CHECK(td::BFloat16::from_double(bf_above).bits == 0x3f81);
  CHECK(td::BFloat16::from_double(1.0 + std::ldexp(1.0, -8)).bits == 0x3f80);  // exact tie: even
  CHECK(td::Half::from_double(1e300).bits == 0x7c00);
  CHECK(td::Half::from_double(-1e-300).bits == 0x8000);
}

TEST_CASE("float16 tensors convert element-wise through the same rounding", "[cpu]") {
  td::Tensor x = td::tensor({1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 65520.0, -0.1}, td::kFloat64);
  td::Tensor h = x.to(td::kFloat16);
  CHECK(h.data_ptr<td::Half>()[0].bits == 0x3c01);
  CHECK(h.data_ptr<td::Half>()[1].bits == 0x7c00);
  CHECK(h.data_ptr<td::Half>()[2].bits == td::Half::from_double(-0.1).bits);
}
