// Joining and indexing, without autograd: cat, stack, index_select, gather, scatter_add,
// embedding, one_hot (split, chunk and unbind are views: kernels/views.h). Indices are int64 or
// int32; every index is checked before anything is written.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::kernels {

// Every index in [0, size), or an error of op's naming the offending value, where it sits and
// `what` it indexes.
void check_index_range(const Tensor& index, int64_t size, const char* op, const std::string& what);

// Joins along an existing dim; dtypes promote as for a binary op.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins along a new dim; all tensors must have one shape.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// x's slices at `index` (1-D) along dim.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// out[i][j] = x[i][index[i][j]] for dim 1 (likewise for any dim); out has index's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// A copy of x with src[i][j] added at x[i][index[i][j]] for dim 1; repeated indices accumulate
// in a fixed order.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// x with src's elements (or value) written at the positions index names along dim, as scatter_add
// places them. Of several writes to one place the last one stays on the CPU; on a GPU any one may,
// as in PyTorch.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, Scalar value);
// x with src's elements combined into the positions index names along dim by reduce: "sum", "prod",
// "mean", "amax" or "amin" (NaN wins). With include_self, x's own element takes part; without, it
// is left out wherever anything lands. mean divides by how many took part (integers: floored);
// places nothing lands on keep x.
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);
Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self = true);
// Rows of weight [num, dim] picked by indices of any shape: out is indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// int64 indices to int64 one-hot vectors; num_classes = -1 means max(indices) + 1.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace tandem::kernels
