// Helpers the distributions and the transforms share (not part of the API).
#pragma once

#include <limits>

#include "autograd/ops.h"
#include "core/tensor.h"
#include "kernels/factory.h"

namespace tandem::distributions::internal {

// torch.finfo(dtype).eps, .tiny (the smallest normal number) and .min of a floating dtype.
inline double machine_epsilon(DType dtype) {
  switch (dtype) {
    case kFloat64: return std::numeric_limits<double>::epsilon();
    case kFloat16: return 0x1p-10;
    case kBFloat16: return 0x1p-7;
    default: return std::numeric_limits<float>::epsilon();
  }
}
inline double tiniest(DType dtype) {
  switch (dtype) {
    case kFloat64: return std::numeric_limits<double>::min();
    case kFloat16: return 0x1p-14;
    default: return std::numeric_limits<float>::min();  // float32 and bfloat16
  }
}
inline double lowest(DType dtype) {
  switch (dtype) {
    case kFloat64: return std::numeric_limits<double>::lowest();
    case kFloat16: return -65504.0;
    case kBFloat16: return -0x1.fep127;
    default: return std::numeric_limits<float>::lowest();
  }
}

// log(1 + e^x) through logaddexp, whose gradient is the sigmoid everywhere (0 included).
inline Tensor softplus(const Tensor& x) { return logaddexp(x, zeros_like(x)); }

// The sum over the last n dims.
inline Tensor sum_rightmost(const Tensor& t, int64_t n) {
  if (n == 0) return t;
  Shape shape(t.sizes().begin(), t.sizes().end() - n);
  shape.push_back(-1);
  return t.reshape(shape).sum(-1);
}

}  // namespace tandem::distributions::internal
