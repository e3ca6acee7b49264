// Helpers the op entry points share: device checks and the error for a device without kernels.
#pragma once

#include <initializer_list>
#include <utility>

#include "core/tensor.h"
#include "kernels/copy.h"
#include "kernels/views.h"

namespace tandem::kernels {

// Raised by an entry point when no backend in this build runs `op` on `device`.
[[noreturn]] void unsupported_device(const char* op, Device device);

// All tensors must be defined and on one device; returns it.
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);

// A defined tensor, or an error naming the op and the argument.
void check_defined(const Tensor& t, const char* op, const char* arg);

// In-place writes: `out` may not have several elements at one address (an expanded tensor),
// and may not partly overlap an input (a tensor fully the same as `out` is fine).
void check_no_internal_overlap(const Tensor& out, const char* op);
void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op);
// Ops that write elements other than the ones they read (scatter_add_ writes x[index[k]] from
// src[k]): `in`, the argument named `arg`, may share no memory with `out` at all, as in PyTorch.
void check_no_overlap(const Tensor& out, const Tensor& in, const char* op, const char* arg);
// Whether the elements fill a block of memory exactly once, in some order of the dims.
bool is_non_overlapping_and_dense(const Tensor& t);

// Writes into dst without counting an in-place write (dst's version is unchanged): for ops that
// fill their own fresh outputs. src broadcasts to dst; dtypes and CPU devices may differ.
void copy_into(const Tensor& dst, const Tensor& src);
void fill_into(const Tensor& dst, Scalar value);
// Throws tandem::Error naming op where `dtype` cannot hold `value` (PyTorch's checked conversion
// of a number): an integer dtype a value beyond its range, NaN or an infinity (uint8 takes the
// integers -255 to -1, which wrap, as in PyTorch); a floating dtype a finite value beyond its
// largest (1e5 in float16). Infinities and NaN fit a floating dtype; bool takes any value.
void check_value_fits(Scalar value, DType dtype, const char* op);
// The values of an integer dtype (bool: 0 and 1), lowest and largest.
std::pair<int64_t, int64_t> integer_range(DType dtype);
// The largest finite value of a floating dtype.
double largest_finite(DType dtype);

// A fresh contiguous tensor.
Tensor empty_tensor(IntList sizes, DType dtype, Device device);

}  // namespace tandem::kernels
