// The batches of column-major matrices that the factorization backends (cpu/lapack.cc, LAPACK;
// cuda/solver.cu, cuSOLVER) work on: a contiguous [batch, cols, rows] tensor holds column j of
// matrix b at [b, j, :], as both libraries read it, with 32-bit dimensions.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/tensor.h"

namespace tandem::kernels {

struct ColumnMajorBatch {
  int64_t batch;
  int cols, rows;

  // t's batch; a dimension past 2^31 - 1 is an error of op's on `library`.
  static ColumnMajorBatch of(const Tensor& t, const char* op, const char* library) {
    TD_CHECK(t.sizes()[1] <= INT32_MAX && t.sizes()[2] <= INT32_MAX, op, " on ", t.device(),
             ": a matrix dimension beyond 2^31 - 1 is not supported by ", library, " (", shape_str(t.sizes()), ")");
    return {t.sizes()[0], static_cast<int>(t.sizes()[1]), static_cast<int>(t.sizes()[2])};
  }
};

// A leading dimension: at least 1, also for matrices of no rows.
inline int leading_dim(int rows) { return std::max(1, rows); }

// Matrix b of a batch.
template <typename T>
T* matrix_at(const Tensor& t, int64_t b) {
  return t.data_ptr<T>() + b * t.sizes()[1] * t.sizes()[2];
}

}  // namespace tandem::kernels
