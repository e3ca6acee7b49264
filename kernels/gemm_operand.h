// How a BLAS (OpenBLAS on the CPU, cuBLAS on a GPU) reads one [B, rows, cols] operand of a
// batched matrix product: in place when its strides allow, as stored or transposed, else from a
// contiguous copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "core/tensor.h"
#include "kernels/copy.h"

namespace tandem::kernels {

struct GemmOperand {
  bool transposed;  // read column-major (the BLAS's "T") rather than row-major
  int64_t ld;       // leading dimension
};

// A rows x cols matrix with strides (s0, s1), if a BLAS can read it in place.
inline std::optional<GemmOperand> gemm_operand(int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  if ((cols == 1 || s1 == 1) && (rows == 1 || s0 >= std::max<int64_t>(1, cols))) {
    return GemmOperand{false, rows == 1 ? std::max<int64_t>(1, cols) : s0};
  }
  if ((rows == 1 || s0 == 1) && (cols == 1 || s1 >= std::max<int64_t>(1, rows))) {
    return GemmOperand{true, cols == 1 ? std::max<int64_t>(1, rows) : s1};
  }
  return std::nullopt;
}

// t itself when a BLAS reads it in place, else a contiguous copy; `layout` says how to read it.
inline Tensor gemm_ready(const Tensor& t, GemmOperand& layout) {
  if (auto l = gemm_operand(t.sizes()[1], t.sizes()[2], t.strides()[1], t.strides()[2])) {
    layout = *l;
    return t;
  }
  layout = GemmOperand{false, std::max<int64_t>(1, t.sizes()[2])};
  return contiguous(t);
}

}  // namespace tandem::kernels
