#include "kernels/backend.h"

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace tandem::kernels {

void unsupported_device(const char* op, Device device) {
  TD_FAIL(op, ": tensors on ", device, " are not supported by this build of tandem (no ", device.type(),
          " kernels)");
}

void check_defined(const Tensor& t, const char* op, const char* arg) {
  TD_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

Device common_device(const char* op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    TD_CHECK(t->defined(), op, ": got an undefined tensor");
    if (!first) {
      first = t;
    } else {
      TD_CHECK(t->device() == first->device(), op, ": expected all tensors on one device, but found ",
               first->device(), " and ", t->device());
    }
  }
  return first->device();
}

bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  std::vector<int64_t> order(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return t.sizes()[a] == 1 ? false : t.sizes()[b] == 1 ? true : t.strides()[a] < t.strides()[b];
  });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (t.sizes()[d] == 1) continue;
    if (t.strides()[d] != expected) return false;
    expected *= t.sizes()[d];
  }
  return true;
}

void check_no_internal_overlap(const Tensor& out, const char* op) {
  for (int64_t d = 0; d < out.dim(); ++d) {
    TD_CHECK(out.sizes()[d] <= 1 || out.strides()[d] != 0, op,
             ": more than one element of the written-to tensor refers to a single memory location (shape ",
             shape_str(out.sizes()), ", strides ", shape_str(out.strides()),
             "); clone() it before writing in place");
  }
}

void check_no_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  if (!out.is_alias_of(in) || out.numel() == 0 || in.numel() == 0) return;
  if (out.storage_offset() == in.storage_offset() && out.sizes() == in.sizes() && out.strides() == in.strides()) {
    return;  // the same elements: each is read before it is written
  }
  if (!is_non_overlapping_and_dense(out) || !is_non_overlapping_and_dense(in)) return;  // too hard to tell
  int64_t out_begin = out.storage_offset(), out_end = out_begin + out.numel();
  int64_t in_begin = in.storage_offset(), in_end = in_begin + in.numel();
  TD_CHECK(out_end <= in_begin || in_end <= out_begin, op,
           ": some elements of the input refer to the same memory as the written-to tensor but at other "
           "positions; clone() the input first");
}

void check_no_overlap(const Tensor& out, const Tensor& in, const char* op, const char* arg) {
  if (!out.is_alias_of(in) || out.numel() == 0 || in.numel() == 0) return;
  const bool same = out.storage_offset() == in.storage_offset() && out.sizes() == in.sizes() &&
                    out.strides() == in.strides() && out.dtype() == in.dtype();
  if (!same && (!is_non_overlapping_and_dense(out) || !is_non_overlapping_and_dense(in))) return;  // too hard to tell
  auto bytes = [](const Tensor& t) {
    const int64_t begin = t.storage_offset() * static_cast<int64_t>(element_size(t.dtype()));
    return std::pair{begin, begin + t.numel() * static_cast<int64_t>(element_size(t.dtype()))};
  };
  const auto [out_begin, out_end] = bytes(out);
  const auto [in_begin, in_end] = bytes(in);
  TD_CHECK(out_end <= in_begin || in_end <= out_begin, op, ": ", arg,
           " refers to memory of the written-to tensor, which the op writes at other positions than it reads; "
           "clone() it first");
}

std::pair<int64_t, int64_t> integer_range(DType dtype) {
  switch (dtype) {
    case kBool: return {0, 1};
    case kUInt8: return {0, 255};
    case kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case kInt64: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    default: TD_FAIL("integer_range: ", dtype, " is not an integer dtype");
  }
}

double largest_finite(DType dtype) {
  switch (dtype) {
    case kFloat16: return 65504.0;
    case kBFloat16: return 3.3895313892515355e38;
    case kFloat32: return std::numeric_limits<float>::max();
    case kFloat64: return std::numeric_limits<double>::max();
    default: TD_FAIL("largest_finite: ", dtype, " is not a floating dtype");
  }
}

void copy_into(const Tensor& dst, const Tensor& src) {
  dst.is_cpu() && src.is_cpu() ? cpu::copy(dst, src) : cuda::copy(dst, src);
}

void check_value_fits(Scalar value, DType dtype, const char* op) {
  if (dtype == kBool || value.is_bool()) return;
  double lowest = 0, largest = 0;  // the finite range of dtype
  switch (dtype) {
    case kUInt8: largest = 255; break;
    case kInt32: lowest = -2147483648.0, largest = 2147483647.0; break;
    case kInt64: lowest = -9223372036854775808.0, largest = 9223372036854775807.0; break;
    case kFloat16: lowest = -65504, largest = 65504; break;
    case kBFloat16: lowest = -3.3895313892515355e38, largest = 3.3895313892515355e38; break;
    case kFloat32: lowest = -std::numeric_limits<float>::max(), largest = std::numeric_limits<float>::max(); break;
    default: return;  // float64 holds every number a Scalar does
  }
  bool fits = false;
  if (is_integral(dtype, false)) {
    if (value.is_integral()) {
      // Compared as an integer (int64's bounds are not all doubles). uint8 also takes the integers
      // -255 to -1, which wrap: PyTorch's rule, so that a - b can be a + 255 * b.
      const int64_t v = value.to_int();
      const double lowest_integer = dtype == kUInt8 ? -255 : lowest;
      fits = dtype == kInt64 || (static_cast<double>(v) >= lowest_integer && static_cast<double>(v) <= largest);
    } else {
      const double v = value.to_double();
      fits = v >= lowest && (dtype == kInt64 ? v < 9223372036854775808.0 : v <= largest);  // false for NaN
    }
  } else {
    const double v = value.to_double();
    fits = !std::isfinite(v) || (v >= lowest && v <= largest);
  }
  TD_CHECK(fits, op, ": the value ", value, " cannot be converted to ", dtype, " without overflow");
}

void fill_into(const Tensor& dst, Scalar value) {
  dst.is_cuda() ? cuda::fill(dst, value) : cpu::fill(dst, value);
}

Tensor empty_tensor(IntList sizes, DType dtype, Device device) {
  for (int64_t s : sizes) TD_CHECK(s >= 0, "empty: negative size in ", shape_str(sizes.vec()));
  const int64_t n = numel_of(sizes);
  size_t bytes = 0;
  TD_CHECK(!__builtin_mul_overflow(static_cast<size_t>(n), element_size(dtype), &bytes), "empty: shape ",
           shape_str(sizes.vec()), " of ", dtype, " needs more bytes than a size_t counts");
  Storage storage = Storage::allocate(bytes, device);
  return Tensor::make(std::move(storage), sizes.vec(), contiguous_strides(sizes), 0, dtype);
}

}  // namespace tandem::kernels
