#include "core/tensor.h"

#include <algorithm>

namespace tandem {

Tensor Tensor::make(Storage storage, Shape sizes, Shape strides, int64_t offset, DType dtype, const Tensor* base) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->version = base ? base->impl().version : std::make_shared<VersionCounter>();
  return Tensor(std::move(impl));
}

int64_t Tensor::size(int64_t dim) const {
  TD_CHECK(this->dim() > 0, "size: dim ", dim, " asked of a 0-dim tensor, which has no dims");
  return sizes()[wrap_dim(dim, this->dim(), "size")];
}

int64_t Tensor::stride(int64_t dim) const {
  TD_CHECK(this->dim() > 0, "stride: dim ", dim, " asked of a 0-dim tensor, which has no dims");
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

int64_t Tensor::numel() const { return numel_of(sizes()); }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const Shape& sz = sizes();
  const Shape& st = strides();
  if (std::find(sz.begin(), sz.end(), 0) != sz.end()) return true;  // empty: as PyTorch, whatever its strides
  for (size_t i = sz.size(); i-- > 0;) {
    if (sz[i] != 1 && st[i] != expected) return false;
    expected *= sz[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  char* base = static_cast<char*>(storage().data());
  return base ? base + storage_offset() * static_cast<int64_t>(element_size()) : nullptr;
}

}  // namespace tandem
