// Copies and conversions, without autograd: copy_, contiguous, clone, to, reshape, flatten,
// fill_, zero_, item. (The Tensor methods of the same names add gradients on top.)
#pragma once

#include "core/tensor.h"

namespace tandem::kernels {

// Writes src, broadcast and converted (dtype, device), into self; counts as an in-place write.
void copy_(const Tensor& self, const Tensor& src);
void fill_(const Tensor& self, Scalar value);
void zero_(const Tensor& self);
Tensor contiguous(const Tensor& self);  // self when already contiguous
Tensor clone(const Tensor& self);
Tensor to(const Tensor& self, DType dtype);  // self when nothing changes
Tensor to(const Tensor& self, Device device);
Tensor to(const Tensor& self, Device device, DType dtype);
Tensor reshape(const Tensor& self, IntList sizes);  // a view when the layout allows, else a copy
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Scalar item(const Tensor& self);  // exactly one element
// A copy in pinned host memory (needs a CUDA device), for asynchronous copies to a GPU. No autograd history.
Tensor pin_memory(const Tensor& self);
bool is_pinned(const Tensor& self);

}  // namespace tandem::kernels
