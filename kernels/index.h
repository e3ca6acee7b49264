// Joining and indexing, without autograd: cat, stack, index_select, gather, scatter_add,
// embedding, one_hot (split, chunk and unbind are views: kernels/views.h). Indices are int64 or
// int32; every index is checked before anything is written.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace tandem::kernels {

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
// Rows of weight [num, dim] picked by indices of any shape: out is indices.shape + [dim].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// int64 indices to int64 one-hot vectors; num_classes = -1 means max(indices) + 1.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

}  // namespace tandem::kernels
