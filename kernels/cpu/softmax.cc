// CPU softmax and log_softmax along a dim of a contiguous tensor viewed as [outer, size, inner].
// Rows (inner = 1) are done one at a time in three vectorized passes: max, exp(x - max) with
// its sum, scale. Otherwise the inner positions are processed side by side, so every pass walks
// memory contiguously. The sums are kept in double: in float, once a long row's sum is large its
// small terms round away, which biased a 1e6-element softmax by 1.5e-3.
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/rows.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

namespace {

// One contiguous row: independent lanes let the compiler vectorize the max and the sum.
template <typename T>
void softmax_row(const T* in, T* out, int64_t n, bool log) {
  using M = opmath_t<T>;
  const fn::Exp exp_fn;
  const M max = row_max<M>(n, [&](int64_t k) { return static_cast<M>(in[k]); });
  // The sum in lanes as row_sum takes it, but keeping each exp for the last pass.
  double lane_sum[kRowLanes] = {};
  int64_t k = 0;
  for (; k + kRowLanes <= n; k += kRowLanes) {
    for (int l = 0; l < kRowLanes; ++l) {
      M e = exp_fn(static_cast<M>(in[k + l]) - max);
      lane_sum[l] += static_cast<double>(e);
      if constexpr (std::is_same_v<T, M>) out[k + l] = e;  // kept for the last pass (exact in T)
    }
  }
  double sum = 0;
  for (; k < n; ++k) {
    M e = exp_fn(static_cast<M>(in[k]) - max);
    sum += static_cast<double>(e);
    if constexpr (std::is_same_v<T, M>) out[k] = e;
  }
  for (int l = 0; l < kRowLanes; ++l) sum += lane_sum[l];

  if (log) {
    const M log_sum = static_cast<M>(std::log(sum));
    for (k = 0; k < n; ++k) out[k] = static_cast<T>((static_cast<M>(in[k]) - max) - log_sum);
  } else if constexpr (std::is_same_v<T, M>) {
    const M scale = static_cast<M>(1.0 / sum);
    for (k = 0; k < n; ++k) out[k] *= scale;
  } else {  // 16-bit outputs: recompute rather than round e twice
    const M scale = static_cast<M>(1.0 / sum);
    for (k = 0; k < n; ++k) out[k] = static_cast<T>(exp_fn(static_cast<M>(in[k]) - max) * scale);
  }
}

}  // namespace

void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[dim];
  const int64_t inner = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin() + dim + 1, x.sizes().end()));
  const int64_t outer = size * inner == 0 ? 0 : x.numel() / (size * inner);
  if (x.numel() == 0) return;
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    if (inner == 1) {
      parallel_for(0, outer, std::max<int64_t>(1, 16384 / size), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) softmax_row(src + row * size, dst + row * size, size, log);
      });
      return;
    }
    const fn::Exp exp_fn;
    const fn::Log log_fn;
    parallel_for(0, outer * inner, std::max<int64_t>(1, 16384 / size), [&](int64_t begin, int64_t end) {
      std::vector<M> max(inner);
      std::vector<double> sum(inner);
      for (int64_t task = begin; task < end;) {
        // A task range covers whole or partial outer slabs; take one slab's share at a time.
        const int64_t o = task / inner, i0 = task % inner, i1 = std::min(inner, i0 + (end - task));
        const T* in = src + o * size * inner;
        T* res = dst + o * size * inner;
        for (int64_t i = i0; i < i1; ++i) {
          max[i] = -std::numeric_limits<M>::infinity();
          sum[i] = 0;
        }
        for (int64_t k = 0; k < size; ++k) {
          for (int64_t i = i0; i < i1; ++i) {
            M v = static_cast<M>(in[k * inner + i]);
            max[i] = (v > max[i] || v != v) ? v : max[i];
          }
        }
        for (int64_t k = 0; k < size; ++k) {
          for (int64_t i = i0; i < i1; ++i) {
            M e = exp_fn(static_cast<M>(in[k * inner + i]) - max[i]);
            sum[i] += static_cast<double>(e);
            if constexpr (std::is_same_v<T, M>) {
              if (!log) res[k * inner + i] = e;  // kept for the last pass (exact in T)
            }
          }
        }
        for (int64_t k = 0; k < size; ++k) {
          for (int64_t i = i0; i < i1; ++i) {
            if (log) {
              res[k * inner + i] =
                  static_cast<T>(static_cast<M>(in[k * inner + i]) - max[i] - static_cast<M>(log_fn(sum[i])));
            } else if constexpr (std::is_same_v<T, M>) {
              res[k * inner + i] = res[k * inner + i] / static_cast<M>(sum[i]);
            } else {  // 16-bit outputs: recompute rather than round e twice
              res[k * inner + i] =
                  static_cast<T>(exp_fn(static_cast<M>(in[k * inner + i]) - max[i]) / static_cast<M>(sum[i]));
            }
          }
        }
        task += i1 - i0;
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
