// Explicit dtype dispatch: calls f.template operator()<T>() with T the C++ type of a dtype,
// for ops written once as a templated lambda: dispatch_floating(t, "exp", [&]<typename T>() { ... }).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace tandem {

template <typename T, typename... Rest, typename F>
decltype(auto) dispatch_types(DType t, const char* op, F&& f) {
  if (t == dtype_of<T>) return f.template operator()<T>();
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch_types<Rest...>(t, op, f);
  } else {
    TD_FAIL(op, ": dtype ", t, " is not supported");
  }
}

template <typename F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  return dispatch_types<float, double, Half, BFloat16, int64_t, int32_t, uint8_t, bool>(t, op, f);
}

template <typename F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  return dispatch_types<float, double, Half, BFloat16>(t, op, f);
}

// Every dtype but bool.
template <typename F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  return dispatch_types<float, double, Half, BFloat16, int64_t, int32_t, uint8_t>(t, op, f);
}

}  // namespace tandem
