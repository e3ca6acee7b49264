// Sorting rows on the CPU: each row's positions ordered by a stable sort on its values, rows in
// parallel. Values compare in op-math (float for the 16-bit floats).
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  const int64_t rows = in.size(0), n = in.size(1);
  if (rows == 0 || n == 0) return;
  dispatch_all(in.dtype(), "sort", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = in.data_ptr<T>();
    T* out = values.data_ptr<T>();
    int64_t* positions = indices.data_ptr<int64_t>();
    parallel_for(0, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t first, int64_t last) {
      std::vector<M> keys(static_cast<size_t>(n));
      for (int64_t r = first; r < last; ++r) {
        const T* row = src + r * n;
        int64_t* order = positions + r * n;
        for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<M>(row[i]);
        std::iota(order, order + n, int64_t{0});
        // NaN is above every number: last going up, first going down.
        if (descending) {
          std::stable_sort(order, order + n, [&](int64_t a, int64_t b) {
            return (fn::is_nan(keys[a]) && !fn::is_nan(keys[b])) || keys[a] > keys[b];
          });
        } else {
          std::stable_sort(order, order + n, [&](int64_t a, int64_t b) {
            return (!fn::is_nan(keys[a]) && fn::is_nan(keys[b])) || keys[a] < keys[b];
          });
        }
        for (int64_t i = 0; i < n; ++i) out[r * n + i] = row[order[i]];
      }
    });
  });
}

void searchsorted_rows(const Tensor& out, const Tensor& sorted, const Tensor& values, bool right) {
  const int64_t rows = values.size(0), m = values.size(1), n = sorted.size(1);
  if (rows == 0 || m == 0) return;
  dispatch_all(values.dtype(), "searchsorted", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* seq = sorted.data_ptr<T>();
    const T* v = values.data_ptr<T>();
    int64_t* positions = out.data_ptr<int64_t>();
    // NaN is above every number, as in sort.
    const auto before = [](M a, M b) { return (!fn::is_nan(a) && fn::is_nan(b)) || a < b; };
    parallel_for(0, rows * m, 2048, [&](int64_t first, int64_t last) {
      for (int64_t e = first; e < last; ++e) {
        const T* row = seq + (e / m) * n;
        const M key = static_cast<M>(v[e]);
        int64_t lo = 0, hi = n;
        while (lo < hi) {
          const int64_t mid = lo + (hi - lo) / 2;
          const M element = static_cast<M>(row[mid]);
          if (right ? !before(key, element) : before(element, key)) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        positions[e] = lo;
      }
    });
  });
}

namespace {

template <typename T, typename Takes>
void running_extreme(const T* row, T* out, int64_t* at, int64_t n, Takes takes) {
  using M = opmath_t<T>;
  M best = static_cast<M>(row[0]);
  int64_t where = 0;
  for (int64_t i = 0; i < n; ++i) {
    const M x = static_cast<M>(row[i]);
    if (i == 0 || takes(x, best)) {
      best = x;
      where = i;
    }
    out[i] = static_cast<T>(best);
    at[i] = where;
  }
}

}  // namespace

void scan_rows(RowScan kind, const Tensor& values, const Tensor& indices, const Tensor& in) {
  const int64_t rows = in.size(0), n = in.size(1);
  if (rows == 0 || n == 0) return;
  const auto each_row = [&](auto&& body) {
    parallel_for(0, rows, std::max<int64_t>(1, 4096 / n), [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) body(r);
    });
  };
  if (kind == RowScan::LogSumExp) {
    return dispatch_floating(in.dtype(), "logcumsumexp", [&]<typename T>() {
      using M = opmath_t<T>;
      const T* src = in.data_ptr<T>();
      T* out = values.data_ptr<T>();
      each_row([&](int64_t r) {
        M running = -std::numeric_limits<M>::infinity();
        for (int64_t i = 0; i < n; ++i) {
          running = fn::LogAddExp{}(running, static_cast<M>(src[r * n + i]));
          out[r * n + i] = static_cast<T>(running);
        }
      });
    });
  }
  dispatch_all(in.dtype(), kind == RowScan::Max ? "cummax" : "cummin", [&]<typename T>() {
    const T* src = in.data_ptr<T>();
    T* out = values.data_ptr<T>();
    int64_t* at = indices.data_ptr<int64_t>();
    each_row([&](int64_t r) {
      if (kind == RowScan::Max) {
        running_extreme(src + r * n, out + r * n, at + r * n, n, fn::TakesRunningMax{});
      } else {
        running_extreme(src + r * n, out + r * n, at + r * n, n, fn::TakesRunningMin{});
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
