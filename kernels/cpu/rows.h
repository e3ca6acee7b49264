// Reductions over one contiguous row, shared by the CPU's softmax, layer norm and cross-entropy:
// eight independent lanes, so the compiler vectorizes the loop, folded in a fixed order.
#pragma once

#include <cstdint>
#include <limits>

namespace tandem::kernels::cpu {

inline constexpr int kRowLanes = 8;

// The max over k < n of value(k) (type M); NaN wins. The lanes are a GCC vector type: the
// compiler does not vectorize a float maximum on its own (under IEEE rules it keeps the order
// of the comparisons), nor the lanes of an array here. Each lane keeps its largest value and,
// apart from it, a NaN if it saw one.
template <typename M, typename F>
M row_max(int64_t n, const F& value) {
  typedef M Lanes __attribute__((vector_size(kRowLanes * sizeof(M))));
  constexpr M kLowest = -std::numeric_limits<M>::infinity();
  Lanes largest, nans;
  for (int l = 0; l < kRowLanes; ++l) largest[l] = nans[l] = kLowest;
  int64_t k = 0;
  for (; k + kRowLanes <= n; k += kRowLanes) {
    Lanes v;
    for (int l = 0; l < kRowLanes; ++l) v[l] = value(k + l);
    largest = v > largest ? v : largest;
    nans = v != v ? v : nans;
  }
  M max = kLowest, nan = kLowest;
  for (; k < n; ++k) {
    const M v = value(k);
    max = v > max ? v : max;
    nan = v != v ? v : nan;
  }
  for (int l = 0; l < kRowLanes; ++l) {
    max = largest[l] > max ? largest[l] : max;
    nan = nans[l] != nans[l] ? nans[l] : nan;
  }
  return nan != nan ? nan : max;
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
