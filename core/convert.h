// convert<To>(from): the one value conversion every cast and copy uses, on the host and in CUDA.
// Floating to integer truncates toward zero; NaN and values beyond the range become the minimum
// of int32 or int64, and uint8 takes int64's value modulo 256 (what x86 gives PyTorch), so no
// conversion is undefined behaviour.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/macros.h"

namespace tandem {

template <typename T>
inline constexpr bool is_floating_type_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <typename To, typename From>
TD_INLINE To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != opmath_t<From>(0);
  } else if constexpr (std::is_integral_v<To> && is_floating_type_v<From>) {
    double d = static_cast<double>(static_cast<opmath_t<From>>(v));
    if constexpr (std::is_same_v<To, int32_t>) {
      return d > -2147483649.0 && d < 2147483648.0 ? static_cast<int32_t>(d) : INT32_MIN;
    } else {
      int64_t i = (d > -9223372036854775808.0 && d < 9223372036854775808.0) ? static_cast<int64_t>(d) : INT64_MIN;
      return static_cast<To>(i);
    }
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, double> || std::is_same_v<From, int64_t> || std::is_same_v<From, int32_t>) {
      return To::from_double(static_cast<double>(v));  // one rounding, not two
    } else {
      return To(static_cast<float>(static_cast<opmath_t<From>>(v)));
    }
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

}  // namespace tandem
