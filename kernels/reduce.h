// Reductions over any set of dims (an empty list means all dims), with keepdim, as in PyTorch.
// Integer and bool inputs of sum/prod/cumsum/cumprod give int64; mean/var/std/norm need floating inputs.
// Results do not depend on the number of threads.
#pragma once

#include <optional>
#include <tuple>

#include "core/tensor.h"

namespace tandem::kernels {

Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);

// max/min of all elements; with a dim, (values, int64 indices) where the first max/min wins.
Tensor max(const Tensor& x);
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntList dims = {}, bool keepdim = false);
// Without a dim: the index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// Sum of squared deviations divided by (N - correction): 1 is the unbiased estimate.
Tensor var(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
// The p-norm: p = 2, 1, 0 (count of nonzeros), inf, -inf, or any other p.
Tensor norm(const Tensor& x, double p = 2, IntList dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
// all/any without dims reduce everything; with an empty list of dims, nothing (each element's
// truth), as PyTorch's dim=().
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, IntList dims, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, IntList dims, bool keepdim = false);
// Running sums and products along dim.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace tandem::kernels
