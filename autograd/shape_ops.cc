// Differentiable views, copies, joins and indexing. A view's gradient is the gradient reshaped
// the other way (permute back, sum over what expand broadcast, put a slice back in place).
#include <algorithm>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factory.h"
#include "kernels/index.h"

namespace tandem {

using autograd::match_input;
using autograd::needs_grad;
using autograd::record;
using autograd::sum_to;

namespace {

using Place = std::function<Tensor(const Tensor&)>;

// g written into zeros of `shape` at the view place(zeros): the gradient of a slice. Its own
// gradient takes that view of the incoming gradient, so it is differentiable in turn.
Tensor embed(const Tensor& g, const Shape& shape, const Place& place) {
  Tensor out = zeros(shape, g.options());
  kernels::copy_into(place(out), g);
  if (needs_grad({&g})) {
    record("SliceBackwardBackward0", {&g}, {&out}, [place](const std::vector<Tensor>& gg) -> std::vector<Tensor> {
      return {place(gg[0])};
    });
  }
  return out;
}

// y, the view view_fn(x) made by a kernels view op: records `backward` when x requires grad,
// and (in grad mode) remembers how y views x, for in-place writes through y.
Tensor record_view(const Tensor& x, Tensor y, const char* name, autograd::BackwardFn backward, Place view_fn) {
  if (!is_grad_enabled()) {
    autograd::mark_no_grad_view(y, x);
    return y;
  }
  // A view's backward reads shapes only: the graph may be run through it again (as PyTorch allows).
  if (x.requires_grad()) record(name, {&x}, {&y}, std::move(backward))->saves_nothing = true;
  autograd::mark_view(y, x, std::move(view_fn));
  return y;
}

// A view of x with another shape and the same elements in the same order.
Tensor reshaped_view(const Tensor& x, const Shape& shape, const char* name) {
  Shape from = x.sizes();
  return record_view(
      x, kernels::view(x, shape), name,
      [from](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {reshape(g[0], from)}; },
      [shape](const Tensor& b) { return view(b, shape); });
}

// A view that picks part of x (narrow, slice, select): its gradient is put back in place.
Tensor part_view(const Tensor& x, Tensor y, const char* name, Place place) {
  Shape from = x.sizes();
  return record_view(
      x, y, name,
      [from, place](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {embed(g[0], from, place)}; },
      place);
}

}  // namespace

// ---- views ----

Tensor view(const Tensor& x, IntList sizes) {
  Tensor y = kernels::view(x, sizes);  // validates, with view's own message
  return reshaped_view(x, y.sizes(), "ViewBackward0");
}

Tensor reshape(const Tensor& x, IntList sizes) {
  kernels::check_defined(x, "reshape", "input");
  Shape shape = infer_size(sizes, x.numel(), "reshape");
  if (view_strides(x.sizes(), x.strides(), shape)) return reshaped_view(x, shape, "ViewBackward0");
  return reshaped_view(clone(x), shape, "ViewBackward0");  // the layout needs a copy first
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  kernels::check_defined(x, "flatten", "input");
  if (x.dim() == 0) {  // as one dim, for the dims' range too (PyTorch: start_dim 1 is out of range)
    wrap_dim(start_dim, 1, "flatten");
    wrap_dim(end_dim, 1, "flatten");
    return reshape(x, {1});
  }
  int64_t s = wrap_dim(start_dim, x.dim(), "flatten"), e = wrap_dim(end_dim, x.dim(), "flatten");
  TD_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape shape(x.sizes().begin(), x.sizes().begin() + s);
  shape.push_back(numel_of(Shape(x.sizes().begin() + s, x.sizes().begin() + e + 1)));
  shape.insert(shape.end(), x.sizes().begin() + e + 1, x.sizes().end());
  return reshape(x, shape);
}

Tensor unflatten(const Tensor& x, int64_t dim, IntList sizes) {
  return reshaped_view(x, kernels::unflatten(x, dim, sizes).sizes(), "UnflattenBackward0");
}

Tensor squeeze(const Tensor& x) { return reshaped_view(x, kernels::squeeze(x).sizes(), "SqueezeBackward0"); }
Tensor squeeze(const Tensor& x, int64_t dim) {
  return reshaped_view(x, kernels::squeeze(x, dim).sizes(), "SqueezeBackward1");
}
Tensor unsqueeze(const Tensor& x, int64_t dim) {
  return reshaped_view(x, kernels::unsqueeze(x, dim).sizes(), "UnsqueezeBackward0");
}

Tensor permute(const Tensor& x, IntList dims) {
  Tensor y = kernels::permute(x, dims);
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], x.dim(), "permute")] = static_cast<int64_t>(i);
  Shape order(dims.begin(), dims.end());
  return record_view(
      x, y, "PermuteBackward0",
      [inverse](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {permute(g[0], inverse)}; },
      [order](const Tensor& b) { return permute(b, order); });
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  auto swap = [dim0, dim1](const Tensor& b) { return transpose(b, dim0, dim1); };
  return record_view(
      x, kernels::transpose(x, dim0, dim1), "TransposeBackward0",
      [swap](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {swap(g[0])}; }, swap);
}

Tensor t(const Tensor& x) {
  return record_view(
      x, kernels::t(x), "TBackward0", [](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {t(g[0])}; },
      [](const Tensor& b) { return t(b); });
}

Tensor expand(const Tensor& x, IntList sizes) {
  Shape from = x.sizes(), to_sizes = sizes.vec();
  return record_view(
      x, kernels::expand(x, sizes), "ExpandBackward0",
      [from](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {sum_to(g[0], from)}; },
      [to_sizes](const Tensor& b) { return expand(b, to_sizes); });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  Tensor y = kernels::narrow(x, dim, start, length);
  int64_t begin = start < 0 ? start + x.size(dim) : start;
  return part_view(x, y, "NarrowBackward0", [dim, begin, length](const Tensor& t) { return narrow(t, dim, begin, length); });
}

Tensor narrow_copy(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  const Tensor part = narrow(x, dim, start, length);
  return part.is_contiguous() ? clone(part) : part.contiguous();  // a copy either way
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return part_view(x, kernels::slice(x, dim, start, end, step), "SliceBackward0",
                   [dim, start, end, step](const Tensor& t) { return slice(t, dim, start, end, step); });
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  return part_view(x, kernels::select(x, dim, index), "SelectBackward0",
                   [dim, index](const Tensor& t) { return select(t, dim, index); });
}

Tensor as_strided(const Tensor& x, IntList sizes, IntList strides, std::optional<int64_t> offset) {
  TD_CHECK(!needs_grad({&x}), "as_strided: its gradient is not supported; call it on a detached tensor or under "
           "td::NoGradGuard");
  return kernels::as_strided(x, sizes, strides, offset);
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  kernels::check_defined(x, "diagonal", "input");
  TD_CHECK(x.dim() >= 2, "diagonal: expected a tensor of at least 2 dims, got shape ", shape_str(x.sizes()));
  const int64_t d1 = wrap_dim(dim1, x.dim(), "diagonal"), d2 = wrap_dim(dim2, x.dim(), "diagonal");
  TD_CHECK(d1 != d2, "diagonal: dim1 and dim2 cannot be the same dim (", dim1, " and ", dim2, ")");
  // The diagonal's elements step along both dims at once; the other dims keep their order, first.
  const int64_t n1 = x.size(d1), n2 = x.size(d2);
  const int64_t length = std::max<int64_t>(0, offset >= 0 ? std::min(n1, n2 - offset) : std::min(n1 + offset, n2));
  int64_t start = x.storage_offset();
  if (length > 0) start += offset >= 0 ? offset * x.stride(d2) : -offset * x.stride(d1);
  Shape sizes, strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  sizes.push_back(length);
  strides.push_back(x.stride(d1) + x.stride(d2));
  return part_view(x, kernels::as_strided(x, sizes, strides, start), "DiagonalBackward0",
                   [offset, d1, d2](const Tensor& t) { return diagonal(t, offset, d1, d2); });
}

Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  kernels::check_defined(x, "unfold", "input");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "unfold");
  const int64_t length = x.dim() == 0 ? 1 : x.size(d);
  TD_CHECK(size >= 0, "unfold: size is ", size, " but must be >= 0");
  TD_CHECK(size <= length, "unfold: maximum size for tensor at dimension ", d, " is ", length, " but size is ", size);
  TD_CHECK(step > 0, "unfold: step is ", step, " but must be > 0");
  // Windows start every `step` along d; the new last dim walks within a window.
  const int64_t windows = (length - size) / step + 1;
  Shape sizes = x.sizes(), strides = x.strides();
  const int64_t along = x.dim() == 0 ? 1 : x.stride(d);
  if (x.dim() > 0) {
    sizes[d] = windows;
    strides[d] = along * step;
  }
  sizes.push_back(size);
  strides.push_back(along);
  Tensor y = kernels::as_strided(x, sizes, strides, x.storage_offset());
  // Windows may overlap: the gradient adds each window's part where it came from (index_add), not a copy.
  const Shape from = x.sizes();
  auto backward = [from, d, size, step, windows](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    if (from.empty()) return {sum(g[0])};  // a 0-dim x: one window of one element, or of none
    Tensor parts = movedim(g[0], -1, d + 1);
    parts = flatten(parts, d, d + 1);  // [..., windows * size, ...]
    const Tensor starts = mul(arange(windows, TensorOptions(kInt64).device(g[0].device())), step);
    const Tensor offsets = arange(size, TensorOptions(kInt64).device(g[0].device()));
    const Tensor at = reshape(add(unsqueeze(starts, 1), unsqueeze(offsets, 0)), {-1});
    return {index_add(zeros(from, g[0].options()), d, at, parts)};
  };
  return record_view(x, y, "UnfoldBackward0", backward,
                     [dim, size, step](const Tensor& b) { return unfold(b, dim, size, step); });
}

// ---- the *_copy forms ----

namespace {

Tensor owned(const Tensor& view) { return view.is_contiguous() ? clone(view) : contiguous(view); }

std::vector<Tensor> owned(const std::vector<Tensor>& views) {
  std::vector<Tensor> out;
  for (const Tensor& v : views) out.push_back(owned(v));
  return out;
}

}  // namespace

Tensor alias_copy(const Tensor& x) { return clone(x); }
Tensor as_strided_copy(const Tensor& x, IntList sizes, IntList strides, std::optional<int64_t> offset) {
  return owned(as_strided(x, sizes, strides, offset));
}
Tensor detach_copy(const Tensor& x) { return clone(x.detach()); }
Tensor diagonal_copy(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  return owned(diagonal(x, offset, dim1, dim2));
}
Tensor expand_copy(const Tensor& x, IntList sizes) { return owned(expand(x, sizes)); }
Tensor permute_copy(const Tensor& x, IntList dims) { return owned(permute(x, dims)); }
Tensor select_copy(const Tensor& x, int64_t dim, int64_t index) { return owned(select(x, dim, index)); }
Tensor slice_copy(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                  int64_t step) {
  return owned(slice(x, dim, start, end, step));
}
std::vector<Tensor> split_copy(const Tensor& x, int64_t split_size, int64_t dim) {
  return owned(split(x, split_size, dim));
}
std::vector<Tensor> split_with_sizes_copy(const Tensor& x, IntList split_sizes, int64_t dim) {
  return owned(split_with_sizes(x, split_sizes, dim));
}
Tensor squeeze_copy(const Tensor& x) { return owned(squeeze(x)); }
Tensor squeeze_copy(const Tensor& x, int64_t dim) { return owned(squeeze(x, dim)); }
Tensor t_copy(const Tensor& x) { return owned(t(x)); }
Tensor transpose_copy(const Tensor& x, int64_t dim0, int64_t dim1) { return owned(transpose(x, dim0, dim1)); }
std::vector<Tensor> unbind_copy(const Tensor& x, int64_t dim) { return owned(unbind(x, dim)); }
Tensor unfold_copy(const Tensor& x, int64_t dim, int64_t size, int64_t step) {
  return owned(unfold(x, dim, size, step));
}
Tensor unsqueeze_copy(const Tensor& x, int64_t dim) { return owned(unsqueeze(x, dim)); }
Tensor view_copy(const Tensor& x, IntList sizes) { return owned(view(x, sizes)); }
std::vector<Tensor> unsafe_chunk(const Tensor& x, int64_t chunks, int64_t dim) { return chunk(x, chunks, dim); }
std::vector<Tensor> unsafe_split(const Tensor& x, int64_t split_size, int64_t dim) { return split(x, split_size, dim); }
std::vector<Tensor> unsafe_split_with_sizes(const Tensor& x, IntList split_sizes, int64_t dim) {
  return split_with_sizes(x, split_sizes, dim);
}

std::vector<Tensor> split_with_sizes(const Tensor& x, IntList split_sizes, int64_t dim) {
  kernels::split_with_sizes(x, split_sizes, dim);  // validates
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    parts.push_back(narrow(x, dim, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& part : kernels::split(x, split_size, dim)) sizes.push_back(part.sizes()[wrap_dim(dim, x.dim(), "split")]);
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  std::vector<int64_t> sizes;
  for (const Tensor& part : kernels::chunk(x, chunks, dim)) sizes.push_back(part.sizes()[wrap_dim(dim, x.dim(), "chunk")]);
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  kernels::unbind(x, dim);  // validates
  int64_t d = wrap_dim(dim, x.dim(), "unbind");
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < x.sizes()[d]; ++i) parts.push_back(select(x, d, i));
  return parts;
}

// ---- copies ----

Tensor clone(const Tensor& x) {
  Tensor y = kernels::clone(x);
  if (needs_grad({&x})) {
    record("CloneBackward0", {&x}, {&y}, [](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {g[0]};
    })->saves_nothing = true;
  }
  return y;
}

Tensor contiguous(const Tensor& x) { return x.is_contiguous() ? x : clone(x); }

Tensor to(const Tensor& x, Device device, DType dtype) {
  Tensor y = kernels::to(x, device, dtype);
  if (y.is_same(x) || !needs_grad({&x})) return y;
  Device from_device = x.device();
  DType from_dtype = x.dtype();
  record("ToCopyBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {to(g[0], from_device, from_dtype)};
  })->saves_nothing = true;
  return y;
}

Tensor& copy_(Tensor& self, const Tensor& src) {
  const bool recording = needs_grad({&self, &src});
  autograd::check_inplace(self, "CopyBackwards", recording);
  kernels::copy_(self, src);
  if (recording) {
    Shape src_shape = src.sizes();
    Device src_device = src.device();
    DType src_dtype = src.dtype();
    // The old values are overwritten: they get no gradient; src gets self's.
    autograd::record_inplace("CopyBackwards", self, {&src}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {Tensor(), to(sum_to(g[0], src_shape), src_device, src_dtype)};
    });
  }
  return self;
}

Tensor& fill_(Tensor& self, Scalar value) {
  const bool recording = needs_grad({&self});
  autograd::check_inplace(self, "FillBackward0", recording);
  kernels::fill_(self, value);
  if (recording) {
    autograd::record_inplace("FillBackward0", self, {},
                             [](const std::vector<Tensor>&) -> std::vector<Tensor> { return {Tensor()}; });
  }
  return self;
}

// ---- joins ----

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  Tensor y = kernels::cat(tensors, dim);
  if (!needs_grad(tensors)) return y;
  // Only empty [0] inputs give [0] along any dim (kernels::cat): their gradients are empty along dim 0.
  int64_t d = y.dim() == 1 && y.numel() == 0 ? 0 : wrap_dim(dim, y.dim(), "cat");
  std::vector<const Tensor*> inputs;
  std::vector<int64_t> lengths;  // -1: a skipped empty 1-D input
  std::vector<DType> dtypes;
  for (const Tensor& t : tensors) {
    inputs.push_back(&t);
    bool skipped = t.dim() == 1 && t.numel() == 0 && y.dim() != 1;
    lengths.push_back(skipped ? -1 : t.sizes()[d]);
    dtypes.push_back(t.dtype());
  }
  auto node = record("CatBackward0", inputs, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    std::vector<Tensor> grads;
    int64_t offset = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] < 0) {
        grads.push_back(Tensor());
        continue;
      }
      Tensor part = narrow(g[0], d, offset, lengths[i]);
      grads.push_back(part.dtype() == dtypes[i] ? part : part.to(dtypes[i]));
      offset += lengths[i];
    }
    return grads;
  });
  node->saves_nothing = true;  // lengths and dtypes only
  return y;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (!needs_grad(tensors)) return kernels::stack(tensors, dim);
  for (size_t i = 1; i < tensors.size(); ++i) {
    TD_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: expects each tensor to be equal size, but got ",
             shape_str(tensors[0].sizes()), " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
  }
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(unsqueeze(t, d));
  return cat(parts, d);
}

// ---- indexing ----

namespace {

// index (1-D, or 0-D for one position) shaped to scatter rows of `like` along dim.
Tensor index_along(const Tensor& index, const Tensor& like, int64_t dim) {
  Shape shape(like.dim(), 1);
  shape[dim] = index.numel();
  return index.reshape(shape).expand(like.sizes());
}

// g (shaped like `index`) put into zeros of `shape` where the smaller index covers part of it.
Tensor pad_to(const Tensor& g, const Shape& shape) {
  if (g.sizes() == shape) return g;
  Shape from = g.sizes();
  return embed(g, shape, [from](const Tensor& t) {
    Tensor v = t;
    for (size_t d = 0; d < from.size(); ++d) v = narrow(v, static_cast<int64_t>(d), 0, from[d]);
    return v;
  });
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor y = kernels::index_select(x, dim, index);
  if (!needs_grad({&x})) return y;
  Shape shape = x.sizes();
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "index_select");
  SavedTensor saved_index(index, false);  // the user's: written in place, backward would misroute
  record("IndexSelectBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    if (shape.empty()) return {g[0].reshape(shape)};
    const Tensor idx = saved_index.unpack("IndexSelectBackward0").to(kInt64);
    return {scatter_add(zeros(shape, g[0].options()), d, index_along(idx, g[0], d), g[0])};
  });
  return y;
}

namespace {

// x with zeros where column - row is past `diagonal`: below it for triu (`upper`), above for tril.
Tensor triangle(const char* op, const Tensor& x, int64_t diagonal, bool upper) {
  kernels::check_defined(x, op, "input");
  TD_CHECK(x.dim() >= 2, op, ": expected a tensor of at least 2 dims, got shape ", shape_str(x.sizes()));
  const TensorOptions positions = TensorOptions(kInt64).device(x.device());
  const int64_t rows = x.sizes()[x.dim() - 2], cols = x.sizes()[x.dim() - 1];
  const Tensor offset = arange(cols, positions).unsqueeze(0) - arange(rows, positions).unsqueeze(1);
  return masked_fill(x, upper ? offset < diagonal : offset > diagonal, 0);
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle("tril", x, diagonal, false); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle("triu", x, diagonal, true); }

Tensor flip(const Tensor& x, IntList dims) {
  kernels::check_defined(x, "flip", "input");
  const std::vector<bool> flipped = dim_mask(dims, x.dim(), "flip");
  Tensor y = x;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t n = x.sizes()[d];
    if (!flipped[d] || n < 2) continue;
    const Tensor backwards = arange(n - 1, -1, -1, TensorOptions(kInt64).device(x.device()));
    y = kernels::index_select(y, d, backwards);
  }
  if (y.is_same(x)) y = kernels::clone(x);  // a new tensor even where no element moves
  if (needs_grad({&x})) {
    const std::vector<int64_t> dim_list = dims.vec();
    record("FlipBackward0", {&x}, {&y}, [dim_list](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {flip(g[0], dim_list)};
    })->saves_nothing = true;
  }
  return y;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor y = kernels::gather(x, dim, index);
  if (!needs_grad({&x})) return y;
  Shape shape = x.sizes();
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "gather");
  SavedTensor saved_index(index, false);
  record("GatherBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor idx = saved_index.unpack("GatherBackward0").to(kInt64);
    if (static_cast<int64_t>(shape.size()) != idx.dim()) {  // a 0-dim input or index beside a 1-D one
      const int64_t length = shape.empty() ? 1 : shape[0];
      return {scatter_add(zeros({length}, g[0].options()), 0, idx.reshape({-1}), g[0].reshape({-1})).reshape(shape)};
    }
    return {scatter_add(zeros(shape, g[0].options()), d, idx, g[0])};
  });
  return y;
}

namespace {

autograd::BackwardFn scatter_add_backward(const Tensor& index, const Shape& src_shape, int64_t d) {
  SavedTensor saved_index(index, false);
  return [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {g[0], pad_to(gather(g[0], d, saved_index.unpack("ScatterAddBackward0").to(kInt64)), src_shape)};
  };
}

}  // namespace

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  // Under GPU autocast a float16 x and a float32 src (an autocast product's output and a float32
  // op's) add in float32, as PyTorch's; the in-place form is not autocast, also as PyTorch's.
  if (const auto widest = amp::widest_on_cuda({&x, &src}); widest && (x.dtype() != *widest || src.dtype() != *widest)) {
    amp::SuspendAutocast inside;
    return scatter_add(amp::to_widest(x, *widest), dim, index, amp::to_widest(src, *widest));
  }
  Tensor y = kernels::scatter_add(x, dim, index, src);
  if (!needs_grad({&x, &src})) return y;
  record("ScatterAddBackward0", {&x, &src}, {&y},
         scatter_add_backward(index, src.sizes(), wrap_dim(dim, x.dim(), "scatter_add")));
  return y;
}

Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const bool recording = needs_grad({&x, &src});
  autograd::check_inplace(x, "ScatterAddBackward0", recording);
  kernels::scatter_add_(x, dim, index, src);
  if (recording) {
    autograd::record_inplace("ScatterAddBackward0", x, {&src},
                             scatter_add_backward(index, src.sizes(), wrap_dim(dim, x.dim(), "scatter_add_")));
  }
  return x;
}

namespace {

// The places scatter wrote lose x's gradient (zeroed); src's comes from them, as PyTorch's (a place
// written twice gives each of its sources the gradient).
autograd::BackwardFn scatter_backward(const Tensor& index, const Shape& src_shape, int64_t d, bool with_src) {
  SavedTensor saved_index(index, false);
  return [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor idx = saved_index.unpack("ScatterBackward0").to(kInt64);
    std::vector<Tensor> grads = {scatter(g[0], d, idx, 0)};
    if (with_src) grads.push_back(pad_to(gather(g[0], d, idx), src_shape));
    return grads;
  };
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor y = kernels::scatter(x, dim, index, src);
  if (!needs_grad({&x, &src})) return y;
  record("ScatterBackward0", {&x, &src}, {&y},
         scatter_backward(index, src.sizes(), wrap_dim(dim, x.dim(), "scatter"), true));
  return y;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  Tensor y = kernels::scatter(x, dim, index, value);
  if (!needs_grad({&x})) return y;
  record("ScatterBackward1", {&x}, {&y}, scatter_backward(index, {}, wrap_dim(dim, x.dim(), "scatter"), false));
  return y;
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const bool recording = needs_grad({&x, &src});
  autograd::check_inplace(x, "ScatterBackward0", recording);
  kernels::scatter_(x, dim, index, src);
  if (recording) {
    autograd::record_inplace("ScatterBackward0", x, {&src},
                             scatter_backward(index, src.sizes(), wrap_dim(dim, x.dim(), "scatter_"), true));
  }
  return x;
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  const bool recording = needs_grad({&x});
  autograd::check_inplace(x, "ScatterBackward1", recording);
  kernels::scatter_(x, dim, index, value);
  if (recording) {
    autograd::record_inplace("ScatterBackward1", x, {},
                             scatter_backward(index, {}, wrap_dim(dim, x.dim(), "scatter_"), false));
  }
  return x;
}

namespace {

// The part of src that index reads: its leading corner of index's shape.
Tensor used_part(const Tensor& src, const Tensor& index) {
  Tensor part = src;
  for (int64_t k = 0; k < index.dim(); ++k) part = narrow(part, k, 0, index.sizes()[k]);
  return part;
}

// The gradients of y = scatter_reduce(x, d, index, src, reduce, include_self), PyTorch's: the sum's
// pass through; the mean's are divided by the count; the product's are y over the factor, with a
// factor that is 0 (alone at its place) getting the product of the others instead; amax and amin
// share the gradient evenly among the elements equal to the result. Without self, the places
// anything lands on give x none.
std::vector<Tensor> scatter_reduce_backward(const Tensor& g, const Tensor& x, int64_t d, const Tensor& index,
                                            const Tensor& src, const Tensor& y, const std::string& reduce,
                                            bool include_self) {
  const Tensor s = used_part(src, index);
  const Tensor landed = kernels::scatter(zeros(x.sizes(), TensorOptions(kBool).device(x.device())), d, index, true);
  const auto counted = [&](const Tensor& flags) { return scatter_add(zeros_like(x), d, index, flags.to(x.dtype())); };
  Tensor grad_x, grad_s;
  if (reduce == "sum") {
    grad_x = g;
    grad_s = gather(g, d, index);
  } else if (reduce == "mean") {
    const Tensor n = counted(ones_like(s)) + (include_self ? 1 : 0);
    const Tensor per_element = g / where(n == 0, 1, n);
    grad_x = per_element;
    grad_s = gather(per_element, d, index);
  } else if (reduce == "prod") {
    const Tensor x_nonzero = where(x == 0, 1, x);
    grad_x = g * scatter_reduce(x_nonzero, d, index, src, "prod", include_self) / x_nonzero;
    const Tensor s_zero = s == 0;
    const Tensor lone_zero = logical_and(s_zero, gather(counted(s_zero), d, index) == 1);
    const Tensor others = scatter_reduce(x, d, index, where(lone_zero, 1, s), "prod", include_self);
    grad_s = where(lone_zero, gather(g * others, d, index), gather(g * y, d, index) / where(s_zero, 1, s));
  } else {  // amax, amin: a NaN result counts as equal to the NaN it came from
    const auto same = [](const Tensor& a, const Tensor& b) {
      return logical_or(a == b, logical_and(isnan(a), isnan(b)));
    };
    const Tensor x_is = include_self ? same(x, y) : logical_and(same(x, y), logical_not(landed));
    const Tensor s_is = same(s, gather(y, d, index));
    const Tensor n = x_is.to(x.dtype()) + counted(s_is);
    const Tensor shared = g / where(n == 0, 1, n);
    grad_x = where(x_is, shared, 0);
    grad_s = where(s_is, gather(shared, d, index), 0);
  }
  if (!include_self) grad_x = where(landed, 0, grad_x);
  return {grad_x, pad_to(grad_s, src.sizes())};
}

}  // namespace

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  Tensor y = kernels::scatter_reduce(x, dim, index, src, reduce, include_self);
  if (!needs_grad({&x, &src})) return y;
  const int64_t d = wrap_dim(dim, x.dim(), "scatter_reduce");
  SavedTensor sx(x, false), ssrc(src, false), sy(y, true), sindex(index, false);
  record("ScatterReduceBackward0", {&x, &src}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const char* node = "ScatterReduceBackward0";
    return scatter_reduce_backward(g[0], sx.unpack(node), d, sindex.unpack(node).to(kInt64), ssrc.unpack(node),
                                   sy.unpack(node), reduce, include_self);
  });
  return y;
}

Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self) {
  const char* op = "index_reduce";
  kernels::check_defined(x, op, "self");
  kernels::check_defined(index, op, "index");
  kernels::check_defined(source, op, "source");
  kernels::common_device(op, {&x, &index, &source});
  TD_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin", op,
           "(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  TD_CHECK(index.dim() <= 1 && (index.dtype() == kInt64 || index.dtype() == kInt32), op,
           "(): Index should have dimension 1 or 0 and dtype int64 or int32, got shape ", shape_str(index.sizes()),
           " and dtype ", index.dtype());
  TD_CHECK(source.dtype() == x.dtype(), op, "(): self (", x.dtype(), ") and source (", source.dtype(),
           ") must have the same scalar type");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  bool slices_match =
      source.dim() == x.dim() && (x.dim() == 0 ? index.numel() == 1 : source.sizes()[d] == index.numel());
  for (int64_t k = 0; slices_match && k < x.dim(); ++k) slices_match = k == d || source.sizes()[k] == x.sizes()[k];
  TD_CHECK(slices_match, op, "(): Source/destination tensor must have same slice shapes, and source must have ",
           index.numel(), " (the index's length) along dim ", d, "; got self ", shape_str(x.sizes()), " and source ",
           shape_str(source.sizes()));
  kernels::check_index_range(index, x.dim() == 0 ? 1 : x.sizes()[d], op, "dim " + std::to_string(d));
  const Tensor src = x.dim() == 0 ? reshape(source, {1}) : source;
  const Tensor self = x.dim() == 0 ? reshape(x, {1}) : x;
  // Each slice of source goes to the slice of self its index names: a scatter along d with the index
  // repeated across the slice.
  Shape along(static_cast<size_t>(src.dim()), 1);
  along[d] = index.numel();
  const Tensor spread = expand(reshape(index.to(kInt64), along), src.sizes());
  const Tensor y = scatter_reduce(self, d, spread, src, reduce, include_self);
  return x.dim() == 0 ? reshape(y, {}) : y;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  Tensor y = kernels::embedding(weight, indices);
  if (!needs_grad({&weight})) return y;
  Shape shape = weight.sizes();
  SavedTensor saved_indices(indices, false);
  record("EmbeddingBackward0", {&weight}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor flat = saved_indices.unpack("EmbeddingBackward0").to(kInt64).reshape({-1});
    Tensor rows = g[0].reshape({-1, shape[1]});
    return {scatter_add(zeros(shape, rows.options()), 0, index_along(flat, rows, 0), rows)};
  });
  return y;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) { return kernels::one_hot(indices, num_classes); }

}  // namespace tandem
