// The CPU element-wise loop: N operands (operand 0 is the output) broadcast to one shape, walked
// as 1-D runs of the innermost dim, in parallel over chunks. Each op supplies the inner body; the
// contiguous and broadcast-scalar runs are plain loops the compiler vectorizes.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace tandem::kernels::cpu {

inline constexpr int kMaxLoopDims = 16;
inline constexpr int64_t kElementwiseGrain = 32768;

// The operands' common iteration space: dims innermost first, size-1 dims dropped, and
// neighbouring dims merged where every operand steps through them as one.
template <int N>
struct LoopShape {
  int ndim = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxLoopDims];
  int64_t strides[kMaxLoopDims][N];  // bytes; 0 where an operand is broadcast
  char* data[N];
};

namespace detail {
// Fills `shape` for operands already checked to broadcast to ops[0]'s shape.
void make_loop_shape(int n, const Tensor* const* ops, int64_t* sizes, int64_t* strides, char** data, int& ndim,
                     int64_t& numel);
}  // namespace detail

template <int N>
LoopShape<N> loop_shape(const std::array<const Tensor*, N>& ops) {
  LoopShape<N> s;
  detail::make_loop_shape(N, ops.data(), s.sizes, &s.strides[0][0], s.data, s.ndim, s.numel);
  return s;
}

// Calls run(ptrs, strides, n) for 1-D runs covering the whole shape; ptrs[k] points at operand k's
// first element of the run and strides[k] is its byte step.
template <int N, typename Run>
void for_each_run(const LoopShape<N>& s, int64_t grain, const Run& run) {
  if (s.numel == 0) return;
  if (s.ndim == 0) {
    char* ptrs[N];
    int64_t zero[N] = {};
    for (int k = 0; k < N; ++k) ptrs[k] = s.data[k];
    run(ptrs, zero, int64_t{1});
    return;
  }
  parallel_for(0, s.numel, grain, [&](int64_t begin, int64_t end) {
    int64_t index[kMaxLoopDims];
    int64_t rest = begin;
    for (int d = 0; d < s.ndim; ++d) {
      index[d] = rest % s.sizes[d];
      rest /= s.sizes[d];
    }
    char* ptrs[N];
    for (int64_t pos = begin; pos < end;) {
      for (int k = 0; k < N; ++k) {
        ptrs[k] = s.data[k];
        for (int d = 0; d < s.ndim; ++d) ptrs[k] += index[d] * s.strides[d][k];
      }
      int64_t n = std::min(s.sizes[0] - index[0], end - pos);
      run(ptrs, s.strides[0], n);
      pos += n;
      index[0] += n;
      for (int d = 0; d + 1 < s.ndim && index[d] == s.sizes[d]; ++d) {
        index[d] = 0;
        ++index[d + 1];
      }
    }
  });
}

template <typename T>
T& at(char* p, int64_t i, int64_t stride) {
  return *reinterpret_cast<T*>(p + i * stride);
}

namespace detail {

// Operands broadcast from one element (x + 1, where(c, g, 0), x * w[j]) read from a short run of
// copies, so the loop sees only contiguous arrays and vectorises like the all-contiguous case.
constexpr int64_t kSplatRun = 256;

template <typename Out, typename... In, typename F, size_t... I>
inline void elementwise_run(char** p, const int64_t* s, int64_t n, const F& f, std::index_sequence<I...>) {
  Out* out = reinterpret_cast<Out*>(p[0]);
  if (s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In)) && ...)) {
    std::tuple<const In*...> in{reinterpret_cast<const In*>(p[I + 1])...};
    for (int64_t i = 0; i < n; ++i) out[i] = f(std::get<I>(in)[i]...);
    return;
  }
  if (s[0] == sizeof(Out) && ((s[I + 1] == sizeof(In) || s[I + 1] == 0) && ...)) {
    std::tuple<std::array<In, kSplatRun>...> splat;
    auto source = [&]<size_t J>(std::integral_constant<size_t, J>) {
      using T = std::tuple_element_t<J, std::tuple<In...>>;
      const T* src = reinterpret_cast<const T*>(p[J + 1]);
      if (s[J + 1] != 0) return src;
      std::fill_n(std::get<J>(splat).data(), std::min(n, kSplatRun), *src);
      return static_cast<const T*>(std::get<J>(splat).data());
    };
    const std::tuple<const In*...> base{source(std::integral_constant<size_t, I>{})...};
    for (int64_t start = 0; start < n; start += kSplatRun) {
      const int64_t len = std::min(kSplatRun, n - start);
      const std::tuple<const In*...> in{(std::get<I>(base) + (s[I + 1] == 0 ? 0 : start))...};
      Out* o = out + start;
      for (int64_t i = 0; i < len; ++i) o[i] = f(std::get<I>(in)[i]...);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) at<Out>(p[0], i, s[0]) = f(at<const In>(p[I + 1], i, s[I + 1])...);
}

}  // namespace detail

// out[i] = f(in_0[i], ..., in_k[i]) over operands laid out by loop_shape({&out, &in_0, ...}).
template <typename Out, typename... In, typename F>
void elementwise(const LoopShape<1 + sizeof...(In)>& shape, const F& f) {
  for_each_run(shape, kElementwiseGrain, [&](char** p, const int64_t* s, int64_t n) {
    detail::elementwise_run<Out, In...>(p, s, n, f, std::index_sequence_for<In...>{});
  });
}

}  // namespace tandem::kernels::cpu
