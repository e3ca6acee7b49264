// Views: new tensors over the same storage (no data moves), sharing the base's version
// counter, so a write through one is seen through all. The raw forms, without autograd; the
// Tensor methods of the same names record gradients on top of them.
#pragma once

#include <optional>
#include <vector>

#include "core/tensor.h"

namespace tandem::kernels {

Tensor view(const Tensor& self, IntList sizes);  // a -1 is inferred; fails where strides cannot express it
Tensor as_strided(const Tensor& self, IntList sizes, IntList strides, std::optional<int64_t> offset = std::nullopt);
Tensor permute(const Tensor& self, IntList dims);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);  // transpose of a <= 2-D tensor
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
// Python's x[start:end:step] along dim: bounds clip, negative ones count from the end.
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
Tensor expand(const Tensor& self, IntList sizes);  // broadcast with stride 0; -1 keeps a size
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor unflatten(const Tensor& self, int64_t dim, IntList sizes);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntList split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);

}  // namespace tandem::kernels
