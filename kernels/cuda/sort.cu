// Sorting rows on a GPU: a bottom-up merge sort over all rows at once. Pass p merges neighbouring
// sorted runs of 2^p elements; each element finds its place in the merged run by one binary search
// in the other run (the left run's elements go before equal ones of the right run, so the sort is
// stable). About log2(n) launches of n * rows threads each, for any row length; values compare in
// op-math, NaN above every number, as on the CPU.
#include <cuda_runtime.h>

#include "core/dispatch.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

// Whether a goes strictly before b.
template <typename M>
__device__ bool before(M a, M b, bool descending) {
  return descending ? (fn::is_nan(a) && !fn::is_nan(b)) || a > b : (!fn::is_nan(a) && fn::is_nan(b)) || a < b;
}

template <typename T>
__global__ void merge_pass(T* out_keys, int64_t* out_positions, const T* keys, const int64_t* positions, int64_t total,
                           int64_t n, int64_t width, bool descending) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(e, total) {
    const int64_t row = e / n, i = e % n;
    const T* row_keys = keys + row * n;
    const int64_t start = i / (2 * width) * (2 * width);
    const int64_t middle = start + width < n ? start + width : n;
    const int64_t end = start + 2 * width < n ? start + 2 * width : n;
    const M key = static_cast<M>(row_keys[i]);
    const bool left = i < middle;
    // In the other run, count the elements that go before this one: strictly before it for a left
    // element, not after it for a right one.
    int64_t lo = left ? middle : start, hi = left ? end : middle;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const M other = static_cast<M>(row_keys[mid]);
      const bool goes_first = left ? before(other, key, descending) : !before(key, other, descending);
      if (goes_first) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const int64_t placed = left ? i + (lo - middle) : (i - middle) + (lo - start) + start;
    out_keys[row * n + placed] = row_keys[i];
    out_positions[row * n + placed] = positions[e];
  }
}

template <typename T>
__global__ void search_kernel(int64_t* out, const T* sorted, const T* values, int64_t total, int64_t m, int64_t n,
                              bool right) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(e, total) {
    const T* row = sorted + (e / m) * n;
    const M key = static_cast<M>(values[e]);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const M element = static_cast<M>(row[mid]);
      if (right ? !before(key, element, false) : before(element, key, false)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[e] = lo;
  }
}

// One thread per row: rows are scanned in order, as on the CPU (a long single row is slow here).
template <typename T, typename Takes>
__global__ void running_extreme_kernel(T* out, int64_t* at, const T* in, int64_t rows, int64_t n, Takes takes) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(r, rows) {
    const T* row = in + r * n;
    M best = static_cast<M>(row[0]);
    int64_t where = 0;
    for (int64_t i = 0; i < n; ++i) {
      const M x = static_cast<M>(row[i]);
      if (i == 0 || takes(x, best)) {
        best = x;
        where = i;
      }
      out[r * n + i] = static_cast<T>(best);
      at[r * n + i] = where;
    }
  }
}

template <typename T>
__global__ void log_sum_exp_scan_kernel(T* out, const T* in, int64_t rows, int64_t n) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(r, rows) {
    M running = -std::numeric_limits<M>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      running = fn::LogAddExp{}(running, static_cast<M>(in[r * n + i]));
      out[r * n + i] = static_cast<T>(running);
    }
  }
}

__global__ void iota_rows(int64_t* positions, int64_t total, int64_t n) {
  TD_GRID_STRIDE(e, total) { positions[e] = e % n; }
}

}  // namespace

void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  const int64_t rows = in.size(0), n = in.size(1), total = rows * n;
  if (total == 0) return;
  const Device device = values.device();
  copy(values, in);
  launch("sort", device, total, iota_rows, indices.data_ptr<int64_t>(), total, n);
  if (n == 1) return;
  Tensor spare_values = empty_tensor(values.sizes(), values.dtype(), device);
  Tensor spare_indices = empty_tensor(indices.sizes(), kInt64, device);
  dispatch_all(values.dtype(), "sort", [&]<typename T>() {
    T* keys[2] = {values.data_ptr<T>(), spare_values.data_ptr<T>()};
    int64_t* positions[2] = {indices.data_ptr<int64_t>(), spare_indices.data_ptr<int64_t>()};
    int from = 0;
    for (int64_t width = 1; width < n; width *= 2, from = 1 - from) {
      launch("sort", device, total, merge_pass<T>, keys[1 - from], positions[1 - from], keys[from], positions[from],
             total, n, width, descending);
    }
    if (from == 1) {
      copy(values, spare_values);
      copy(indices, spare_indices);
    }
  });
}

void searchsorted_rows(const Tensor& out, const Tensor& sorted, const Tensor& values, bool right) {
  const int64_t m = values.size(1), n = sorted.size(1), total = values.size(0) * m;
  if (total == 0) return;
  dispatch_all(values.dtype(), "searchsorted", [&]<typename T>() {
    launch("searchsorted", out.device(), total, search_kernel<T>, out.data_ptr<int64_t>(), sorted.data_ptr<T>(),
           values.data_ptr<T>(), total, m, n, right);
  });
}

void scan_rows(RowScan kind, const Tensor& values, const Tensor& indices, const Tensor& in) {
  const int64_t rows = in.size(0), n = in.size(1);
  if (rows == 0 || n == 0) return;
  const Device device = values.device();
  if (kind == RowScan::LogSumExp) {
    return dispatch_floating(in.dtype(), "logcumsumexp", [&]<typename T>() {
      launch("logcumsumexp", device, rows, log_sum_exp_scan_kernel<T>, values.data_ptr<T>(), in.data_ptr<T>(), rows, n);
    });
  }
  dispatch_all(in.dtype(), kind == RowScan::Max ? "cummax" : "cummin", [&]<typename T>() {
    if (kind == RowScan::Max) {
      launch("cummax", device, rows, running_extreme_kernel<T, fn::TakesRunningMax>, values.data_ptr<T>(),
             indices.data_ptr<int64_t>(), in.data_ptr<T>(), rows, n, fn::TakesRunningMax{});
    } else {
      launch("cummin", device, rows, running_extreme_kernel<T, fn::TakesRunningMin>, values.data_ptr<T>(),
             indices.data_ptr<int64_t>(), in.data_ptr<T>(), rows, n, fn::TakesRunningMin{});
    }
  });
}

}  // namespace tandem::kernels::cuda
