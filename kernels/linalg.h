// Matrix products, without autograd: mm, bmm, addmm (matmul, built from these, is in autograd/).
// float32/float64 go to OpenBLAS with transposed operands passed as such, not copied.
#pragma once

#include "core/tensor.h"

namespace tandem::kernels {

Tensor mm(const Tensor& a, const Tensor& b);   // [n, k] @ [k, m]
Tensor bmm(const Tensor& a, const Tensor& b);  // [B, n, k] @ [B, k, m]
// beta * bias + alpha * (a @ b); bias broadcasts to [n, m]. With beta = 0 bias is ignored, NaN included.
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);
// The same into out itself: out = beta * out + alpha * (a @ b), for out [n, m] contiguous (a block
// of rows of a larger matrix, say) of the matrices' dtype and device. A product accumulates into
// out without a temporary; with beta = 0 out's old values, NaN included, are ignored.
void addmm_out(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);

}  // namespace tandem::kernels
