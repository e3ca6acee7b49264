#include "kernels/copy.h"

#include "core/cuda.h"
#include "core/dispatch.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/views.h"

namespace tandem::kernels {

void copy_(const Tensor& self, const Tensor& src) {
  check_defined(self, "copy_", "self");
  check_defined(src, "copy_", "src");
  Shape shape = broadcast_shapes(self.sizes(), src.sizes(), "copy_");
  TD_CHECK(shape == self.sizes(), "copy_: source of shape ", shape_str(src.sizes()),
           " does not broadcast to the destination's shape ", shape_str(self.sizes()));
  if (self.is_same(src)) return;
  check_no_internal_overlap(self, "copy_");
  check_no_partial_overlap(self, src, "copy_");
  copy_into(self, src);
  self.bump_version();
}

Tensor contiguous(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

Tensor clone(const Tensor& self) {
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  copy_into(out, self);
  return out;
}

Tensor to(const Tensor& self, DType dtype) { return to(self, self.device(), dtype); }

Tensor to(const Tensor& self, Device device) { return to(self, device, self.dtype()); }

Tensor to(const Tensor& self, Device target, DType target_dtype) {
  if (target == self.device() && target_dtype == self.dtype()) return self;
  Tensor out = empty_tensor(self.sizes(), target_dtype, target);
  copy_into(out, self);
  return out;
}

Tensor reshape(const Tensor& self, IntList new_sizes) {
  Shape shape = infer_size(new_sizes, self.numel(), "reshape");
  if (view_strides(self.sizes(), self.strides(), shape)) return view(self, shape);
  return view(clone(self), shape);
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) {  // as one dim, for the dims' range too (PyTorch: start_dim 1 is out of range)
    wrap_dim(start_dim, 1, "flatten");
    wrap_dim(end_dim, 1, "flatten");
    return reshape(self, {1});
  }
  int64_t s = wrap_dim(start_dim, self.dim(), "flatten"), e = wrap_dim(end_dim, self.dim(), "flatten");
  TD_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape new_sizes(self.sizes().begin(), self.sizes().begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= self.sizes()[i];
  new_sizes.push_back(merged);
  new_sizes.insert(new_sizes.end(), self.sizes().begin() + e + 1, self.sizes().end());
  return reshape(self, new_sizes);
}


void fill_(const Tensor& self, Scalar value) {
  check_defined(self, "fill_", "self");
  check_value_fits(value, self.dtype(), "fill_");
  fill_into(self, value);
  self.bump_version();
}

void zero_(const Tensor& self) { fill_(self, 0); }

Tensor pin_memory(const Tensor& self) {
  check_defined(self, "pin_memory", "self");
  TD_CHECK(self.is_cpu(), "pin_memory: only CPU tensors can be pinned, got a tensor on ", self.device());
  if (is_pinned(self)) return self;
  Storage storage = tandem::cuda::pinned_storage(self.nbytes());
  Tensor out = Tensor::make(std::move(storage), self.sizes(), contiguous_strides(self.sizes()), 0, self.dtype());
  copy_into(out, self);
  return out;
}

bool is_pinned(const Tensor& self) { return self.defined() && tandem::cuda::is_pinned(self.storage()); }

Scalar item(const Tensor& self) {
  check_defined(self, "item", "self");
  TD_CHECK(self.numel() == 1, "item: a tensor with ", self.numel(), " elements (shape ", shape_str(self.sizes()),
           ") cannot be converted to a number; item() needs exactly one element");
  Tensor host = self.is_cpu() ? self : to(self, Device(kCPU));
  return dispatch_all(self.dtype(), "item", [&]<typename T>() -> Scalar {
    T value = *static_cast<const T*>(host.data_ptr());
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return Scalar(static_cast<float>(value));
    } else {
      return Scalar(value);
    }
  });
}

}  // namespace tandem::kernels
