// The Tensor methods that copy or convert data: copy_, contiguous, clone, to, reshape, flatten,
// fill_, zero_, item.
#include "core/dispatch.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem {

Tensor& Tensor::copy_(const Tensor& src) {
  check_defined(*this, "copy_", "self");
  check_defined(src, "copy_", "src");
  Shape shape = broadcast_shapes(sizes(), src.sizes(), "copy_");
  TD_CHECK(shape == sizes(), "copy_: source of shape ", shape_str(src.sizes()),
           " does not broadcast to the destination's shape ", shape_str(sizes()));
  if (is_same(src)) return *this;
  check_no_internal_overlap(*this, "copy_");
  check_no_partial_overlap(*this, src, "copy_");
  copy_into(*this, src);
  bump_version();
  return *this;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty_tensor(sizes(), dtype(), device());
  copy_into(out, *this);
  return out;
}

Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }

Tensor Tensor::to(Device device) const { return to(device, dtype()); }

Tensor Tensor::to(Device target, DType target_dtype) const {
  if (target == device() && target_dtype == dtype()) return *this;
  Tensor out = empty_tensor(sizes(), target_dtype, target);
  copy_into(out, *this);
  return out;
}

Tensor Tensor::reshape(IntList new_sizes) const {
  Shape shape = infer_size(new_sizes, numel(), "reshape");
  if (view_strides(sizes(), strides(), shape)) return view(shape);
  return clone().view(shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  TD_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape new_sizes(sizes().begin(), sizes().begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= sizes()[i];
  new_sizes.push_back(merged);
  new_sizes.insert(new_sizes.end(), sizes().begin() + e + 1, sizes().end());
  return reshape(new_sizes);
}


Tensor& Tensor::fill_(Scalar value) {
  check_defined(*this, "fill_", "self");
  fill_into(*this, value);
  bump_version();
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

Scalar Tensor::item() const {
  check_defined(*this, "item", "self");
  TD_CHECK(numel() == 1, "item: a tensor with ", numel(), " elements (shape ", shape_str(sizes()),
           ") cannot be converted to a number; item() needs exactly one element");
  Tensor host = is_cpu() ? *this : cpu();
  return dispatch_all(dtype(), "item", [&]<typename T>() -> Scalar {
    T value = *static_cast<const T*>(host.data_ptr());
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return Scalar(static_cast<float>(value));
    } else {
      return Scalar(value);
    }
  });
}

}  // namespace tandem
