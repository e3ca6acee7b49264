// Explicit dtype dispatch: calls f.template operator()<T>() with T the C++ type of a dtype,
// for ops written once as a templated lambda: dispatch_floating(t, "exp", [&]<typename T>() { ... }).
#pragma once

#include <cstdint>
#include <type_traits>

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

// Calls f.template operator()<Out>() with the C++ type of a sum's, product's or running sum's
// output: the input's own, or int64 for integers and bools. kernels/reduce.cc casts the input to
// any other dtype asked for first, as PyTorch does, so an input dtype needs at most two
// instantiations of a reduction, not one for every output dtype.
template <typename In, typename F>
void dispatch_sum_output(DType out, const char* op, F&& f) {
  if constexpr (std::is_integral_v<In>) {
    if (out == kInt64) return f.template operator()<int64_t>();
  }
  TD_CHECK(out == dtype_of<In>, op, ": an output of dtype ", out, " for an input of dtype ", dtype_of<In>,
           " is not supported; cast the input first");
  f.template operator()<In>();
}

}  // namespace tandem
