// Reductions over one contiguous row, shared by the CPU's softmax, layer norm and cross-entropy:
// eight independent lanes, so the compiler vectorizes the loop, folded in a fixed order.
#pragma once

#include <cstdint>
#include <limits>

namespace tandem::kernels::cpu {

inline constexpr int kRowLanes = 8;

// The max over k < n of value(k) (type M); NaN wins.
template <typename M, typename F>
M row_max(int64_t n, const F& value) {
  auto larger = [](M a, M v) { return (v > a || v != v) ? v : a; };
  M lanes[kRowLanes];
  for (int l = 0; l < kRowLanes; ++l) lanes[l] = -std::numeric_limits<M>::infinity();
  int64_t k = 0;
  for (; k + kRowLanes <= n; k += kRowLanes) {
    for (int l = 0; l < kRowLanes; ++l) lanes[l] = larger(lanes[l], value(k + l));
  }
  M max = -std::numeric_limits<M>::infinity();
  for (; k < n; ++k) max = larger(max, value(k));
  for (int l = 0; l < kRowLanes; ++l) max = larger(max, lanes[l]);
  return max;
}

// The sum over k < n of term(k), in double.
template <typename F>
double row_sum(int64_t n, const F& term) {
  double lanes[kRowLanes] = {};
  int64_t k = 0;
  for (; k + kRowLanes <= n; k += kRowLanes) {
    for (int l = 0; l < kRowLanes; ++l) lanes[l] += static_cast<double>(term(k + l));
  }
  double total = 0;
  for (; k < n; ++k) total += static_cast<double>(term(k));
  for (double v : lanes) total += v;
  return total;
}

}  // namespace tandem::kernels::cpu
