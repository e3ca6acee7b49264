// Sorting along a dim, without autograd (autograd/ops.h differentiates the values through gather).
// Every sort here is stable: equal elements keep their order, so ties come out in the order of their
// positions (PyTorch's CPU sort does the same; its topk and kthvalue may pick other positions among
// ties). NaN sorts above every number: last going up, first going down.
#pragma once

#include <tuple>

#include "core/tensor.h"

namespace tandem::kernels {

// Values and int64 indices (positions along dim) of x sorted along dim.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
// The k largest (or smallest) along dim, in order (largest first, or smallest first).
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true);
// The k-th smallest (k from 1) along dim.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
// The lower median along dim: the element at (n - 1) / 2 of the sorted line; NaN (the first one
// in the line) where the line holds one. nanmedian skips NaNs (NaN only for a line of NaNs).
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false, bool skip_nan = false);

// Where each value would go in sorted_sequence (1-D, or [..., n] with values [..., m] of the same
// leading dims) to keep it sorted: int64 positions shaped as values. Binary search per value.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right = false);

// The running maximum (minimum) along dim and the position of the element it holds: of equal ones
// the latest; a NaN takes over and stays, as PyTorch's cummax (cummin).
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
// log(cumsum(exp(x))) along dim, accumulated as log-add-exps (no overflow, no underflow to -inf).
Tensor logcumsumexp(const Tensor& x, int64_t dim);

}  // namespace tandem::kernels
