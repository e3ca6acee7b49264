#include "kernels/views.h"

#include <algorithm>

namespace tandem::kernels {

namespace {

// The view `sizes/strides/offset` of t's storage, sharing t's version counter.
Tensor make_view(const Tensor& t, Shape sizes, Shape strides, int64_t offset) {
  return Tensor::make(t.storage(), std::move(sizes), std::move(strides), offset, t.dtype(), &t);
}

}  // namespace

Tensor view(const Tensor& self, IntList new_sizes) {
  Shape shape = infer_size(new_sizes, self.numel(), "view");
  auto strides_or = view_strides(self.sizes(), self.strides(), shape);
  TD_CHECK(strides_or.has_value(), "view: cannot view a tensor of shape ", shape_str(self.sizes()), " and strides ",
           shape_str(self.strides()), " as shape ", shape_str(shape),
           ": at least one dimension spans across two contiguous subspaces. Use reshape(...) instead.");
  return make_view(self, std::move(shape), std::move(*strides_or), self.storage_offset());
}

Tensor as_strided(const Tensor& self, IntList new_sizes, IntList new_strides, std::optional<int64_t> offset) {
  TD_CHECK(new_sizes.size() == new_strides.size(), "as_strided: sizes ", shape_str(new_sizes.vec()), " and strides ",
           shape_str(new_strides.vec()), " differ in length");
  int64_t off = offset.value_or(self.storage_offset());
  TD_CHECK(off >= 0, "as_strided: negative storage offset ", off);
  int64_t last = off;  // highest element index the view reaches
  bool overflow = false;
  for (size_t i = 0; i < new_sizes.size(); ++i) {
    TD_CHECK(new_sizes[i] >= 0, "as_strided: negative size in ", shape_str(new_sizes.vec()));
    TD_CHECK(new_strides[i] >= 0, "as_strided: negative stride in ", shape_str(new_strides.vec()));
    int64_t span = 0;
    overflow = overflow || __builtin_mul_overflow(new_sizes[i] > 0 ? new_sizes[i] - 1 : 0, new_strides[i], &span) ||
               __builtin_add_overflow(last, span, &last);
  }
  if (numel_of(new_sizes) == 0) last = -1;  // numel_of also refuses a count beyond int64
  TD_CHECK(last < 0 || !overflow, "as_strided: sizes ", shape_str(new_sizes.vec()), ", strides ",
           shape_str(new_strides.vec()), " and offset ", off, " reach past the largest int64 element index");
  if (last >= 0) {
    int64_t available = static_cast<int64_t>(self.storage().nbytes() / self.element_size());
    TD_CHECK(last < available, "as_strided: sizes ", shape_str(new_sizes.vec()), ", strides ",
             shape_str(new_strides.vec()), " and offset ", off, " reach element ", last,
             " but the storage holds ", available, " elements");
  }
  return make_view(self, new_sizes.vec(), new_strides.vec(), off);
}

Tensor permute(const Tensor& self, IntList dims) {
  int64_t n = self.dim();
  TD_CHECK(static_cast<int64_t>(dims.size()) == n, "permute: the number of dims ", dims.size(),
           " does not match the tensor's ", n, " dimensions (shape ", shape_str(self.sizes()), ")");
  dim_mask(dims, n, "permute");  // range and repeats
  Shape new_sizes(n), new_strides(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n, "permute");
    new_sizes[i] = self.sizes()[d];
    new_strides[i] = self.strides()[d];
  }
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  int64_t n = self.dim();
  int64_t a = wrap_dim(dim0, n, "transpose"), b = wrap_dim(dim1, n, "transpose");
  if (n == 0) return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  Shape new_sizes = self.sizes(), new_strides = self.strides();
  std::swap(new_sizes[a], new_sizes[b]);
  std::swap(new_strides[a], new_strides[b]);
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
}

Tensor t(const Tensor& self) {
  TD_CHECK(self.dim() <= 2, "t: expects a tensor with <= 2 dimensions, but got shape ", shape_str(self.sizes()));
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}

Tensor narrow(const Tensor& self, int64_t dim_, int64_t start, int64_t length) {
  TD_CHECK(self.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(dim_, self.dim(), "narrow");
  int64_t size = self.sizes()[d];
  TD_CHECK(start >= -size && start <= size, "narrow: start ", start, " is out of range for dim ", d, " of size ",
           size);
  if (start < 0) start += size;
  TD_CHECK(length >= 0 && length <= size - start, "narrow: start ", start, " + length ", length,
           " exceeds dim ", d, " of size ", size, " (shape ", shape_str(self.sizes()), ")");
  Shape new_sizes = self.sizes();
  new_sizes[d] = length;
  return make_view(self, std::move(new_sizes), self.strides(), self.storage_offset() + start * self.strides()[d]);
}

Tensor slice(const Tensor& self, int64_t dim_, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) {
  TD_CHECK(self.dim() > 0, "slice: cannot be applied to a 0-dim tensor");
  TD_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t d = wrap_dim(dim_, self.dim(), "slice");
  int64_t size = self.sizes()[d];
  // Python's clamping: out-of-range bounds are clipped, negative ones count from the end.
  auto clip = [size](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  int64_t start = clip(start_opt.value_or(0));
  int64_t end = std::max(start, clip(end_opt.value_or(size)));
  Shape new_sizes = self.sizes(), new_strides = self.strides();
  new_sizes[d] = end == start ? 0 : (end - start - 1) / step + 1;
  // A step past the dim's end leaves at most one element, whose stride is never multiplied by
  // an index: keep the old one where the product would not fit.
  if (__builtin_mul_overflow(new_strides[d], step, &new_strides[d])) new_strides[d] = self.strides()[d];
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset() + start * self.strides()[d]);
}

Tensor select(const Tensor& self, int64_t dim_, int64_t index) {
  TD_CHECK(self.dim() > 0, "select: cannot be applied to a 0-dim tensor");
  int64_t d = wrap_dim(dim_, self.dim(), "select");
  int64_t size = self.sizes()[d];
  TD_CHECK(index >= -size && index < size, "select: index ", index, " is out of range for dim ", d, " of size ",
           size);
  if (index < 0) index += size;
  Shape new_sizes = self.sizes(), new_strides = self.strides();
  new_sizes.erase(new_sizes.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset() + index * self.strides()[d]);
}

Tensor expand(const Tensor& self, IntList new_sizes) {
  int64_t n = static_cast<int64_t>(new_sizes.size());
  TD_CHECK(n >= self.dim(), "expand: the number of sizes ", shape_str(new_sizes.vec()),
           " must be at least the tensor's dimensions (shape ", shape_str(self.sizes()), ")");
  Shape out_sizes(n), out_strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t j = i - (n - self.dim());  // matching dim of this tensor, or < 0 for a new leading dim
    int64_t want = new_sizes[i];
    if (j >= 0) {
      int64_t have = self.sizes()[j];
      if (want == -1) want = have;
      TD_CHECK(have == want || have == 1, "expand: the size ", have, " of dim ", j, " must match ", want,
               " or be 1 (shape ", shape_str(self.sizes()), " to ", shape_str(new_sizes.vec()), ")");
      TD_CHECK(want >= 0, "expand: invalid size ", want, " in ", shape_str(new_sizes.vec()));
      out_sizes[i] = want;
      out_strides[i] = have == want ? self.strides()[j] : 0;
    } else {
      TD_CHECK(want >= 0, "expand: -1 is not allowed for the new leading dim ", i, " in ",
               shape_str(new_sizes.vec()));
      out_sizes[i] = want;
      // PyTorch's strides: a new dim of size 1 steps over the dims inside it, a broadcast one 0.
      out_strides[i] = want == 1 && i + 1 < n ? out_sizes[i + 1] * out_strides[i + 1] : 0;
    }
  }
  return make_view(self, std::move(out_sizes), std::move(out_strides), self.storage_offset());
}

Tensor squeeze(const Tensor& self) {
  Shape new_sizes, new_strides;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (self.sizes()[i] != 1) {
      new_sizes.push_back(self.sizes()[i]);
      new_strides.push_back(self.strides()[i]);
    }
  }
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
}

Tensor squeeze(const Tensor& self, int64_t dim_) {
  int64_t d = wrap_dim(dim_, self.dim(), "squeeze");
  if (self.dim() == 0 || self.sizes()[d] != 1) return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  Shape new_sizes = self.sizes(), new_strides = self.strides();
  new_sizes.erase(new_sizes.begin() + d);
  new_strides.erase(new_strides.begin() + d);
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim_) {
  int64_t d = wrap_dim(dim_, self.dim() + 1, "unsqueeze");
  Shape new_sizes = self.sizes(), new_strides = self.strides();
  int64_t stride = d < self.dim() ? self.sizes()[d] * self.strides()[d] : 1;
  new_sizes.insert(new_sizes.begin() + d, 1);
  new_strides.insert(new_strides.begin() + d, stride);
  return make_view(self, std::move(new_sizes), std::move(new_strides), self.storage_offset());
}

Tensor unflatten(const Tensor& self, int64_t dim_, IntList parts) {
  TD_CHECK(self.dim() > 0, "unflatten: a 0-dim tensor has no dim to unflatten");
  int64_t d = wrap_dim(dim_, self.dim(), "unflatten");
  TD_CHECK(!parts.empty(), "unflatten: sizes must not be empty");
  Shape inner = infer_size(parts, self.sizes()[d], "unflatten");
  Shape new_sizes(self.sizes().begin(), self.sizes().begin() + d);
  new_sizes.insert(new_sizes.end(), inner.begin(), inner.end());
  new_sizes.insert(new_sizes.end(), self.sizes().begin() + d + 1, self.sizes().end());
  return view(self, new_sizes);
}

std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim_) {
  TD_CHECK(self.dim() > 0, "split: cannot split a 0-dim tensor");
  int64_t d = wrap_dim(dim_, self.dim(), "split");
  int64_t size = self.sizes()[d];
  TD_CHECK(split_size > 0 || (split_size == 0 && size == 0), "split: split_size must be positive, got ",
           split_size);
  std::vector<Tensor> parts;
  if (size == 0) return {narrow(self, d, 0, 0)};
  for (int64_t start = 0; start < size; start += split_size) {
    parts.push_back(narrow(self, d, start, std::min(split_size, size - start)));
  }
  return parts;
}

std::vector<Tensor> split_with_sizes(const Tensor& self, IntList split_sizes, int64_t dim_) {
  TD_CHECK(self.dim() > 0, "split_with_sizes: cannot split a 0-dim tensor");
  int64_t d = wrap_dim(dim_, self.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TD_CHECK(s >= 0, "split_with_sizes: negative size in ", shape_str(split_sizes.vec()));
    total += s;
  }
  TD_CHECK(total == self.sizes()[d], "split_with_sizes: sizes ", shape_str(split_sizes.vec()), " add up to ", total,
           " but dim ", d, " has size ", self.sizes()[d]);
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    parts.push_back(narrow(self, d, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim_) {
  TD_CHECK(self.dim() > 0, "chunk: cannot chunk a 0-dim tensor");
  TD_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  int64_t d = wrap_dim(dim_, self.dim(), "chunk");
  int64_t size = self.sizes()[d];
  if (size == 0) {  // PyTorch: `chunks` empty chunks
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < chunks; ++i) parts.push_back(narrow(self, d, 0, 0));
    return parts;
  }
  return split(self, (size + chunks - 1) / chunks, d);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim_) {
  TD_CHECK(self.dim() > 0, "unbind: cannot unbind a 0-dim tensor");
  int64_t d = wrap_dim(dim_, self.dim(), "unbind");
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < self.sizes()[d]; ++i) parts.push_back(select(self, d, i));
  return parts;
}

}  // namespace tandem::kernels
