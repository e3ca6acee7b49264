#include "kernels/index.h"

#include <limits>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/reduce.h"

namespace tandem::kernels {

namespace {

void check_index_dtype(const Tensor& index, const char* op) {
  TD_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, ": expected an int64 or int32 index tensor, got ",
           index.dtype());
}

}  // namespace

void check_index_range(const Tensor& index, int64_t size, const char* op, const std::string& what) {
  if (index.numel() == 0) return;
  int64_t lo = item(amin(index)).to_int(), hi = item(amax(index)).to_int();
  if (lo >= 0 && hi < size) return;
  int64_t bad = lo < 0 ? lo : hi;
  int64_t at = item(lo < 0 ? argmin(index) : argmax(index)).to_int();
  TD_FAIL(op, ": index ", bad, " (at flat position ", at, " of the index tensor) is out of range for ", what,
          " of size ", size);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  TD_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  // PyTorch skips legacy empty 1-D tensors when the others have more dims.
  // Their dtypes still take part in the promotion.
  std::vector<const Tensor*> parts;
  DType dtype = tensors[0].defined() ? tensors[0].dtype() : kFloat32;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(tensors[i], "cat", "tensors");
    dtype = promote_types(dtype, tensors[i].dtype());
    if (!(tensors[i].dim() == 1 && tensors[i].numel() == 0)) parts.push_back(&tensors[i]);
  }
  if (parts.empty()) {  // only legacy empty [0] tensors: PyTorch gives one, along any dim
    return empty_tensor({0}, dtype, tensors[0].device());
  }
  const Tensor& first = *parts[0];
  TD_CHECK(first.dim() > 0, "cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.sizes();
  shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    TD_CHECK(t.device() == first.device(), "cat: expected all tensors on one device, but found ", first.device(),
             " and ", t.device());
    TD_CHECK(t.dim() == first.dim(), "cat: tensors must have the same number of dimensions: got ", first.dim(),
             " and ", t.dim(), " (shapes ", shape_str(first.sizes()), " and ", shape_str(t.sizes()), ")");
    for (int64_t k = 0; k < t.dim(); ++k) {
      TD_CHECK(k == d || t.sizes()[k] == first.sizes()[k], "cat: sizes of tensors must match except in dim ", d,
               ": expected size ", first.sizes()[k], " but got size ", t.sizes()[k], " in dim ", k, " (shapes ",
               shape_str(first.sizes()), " and ", shape_str(t.sizes()), ")");
    }
    shape[d] += t.sizes()[d];
  }
  Tensor out = empty_tensor(shape, dtype, first.device());
  int64_t offset = 0;
  for (const Tensor* t : parts) {
    copy_into(narrow(out, d, offset, t->sizes()[d]), *t);
    offset += t->sizes()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  TD_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  check_defined(tensors[0], "stack", "tensors");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(tensors[i], "stack", "tensors");
    TD_CHECK(tensors[i].sizes() == tensors[0].sizes(), "stack: expects each tensor to be equal size, but got ",
             shape_str(tensors[0].sizes()), " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}


Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined(x, "index_select", "input");
  check_defined(index, "index_select", "index");
  common_device("index_select", {&x, &index});
  check_index_dtype(index, "index_select");
  TD_CHECK(index.dim() <= 1, "index_select: index must be 0-D or 1-D, got shape ", shape_str(index.sizes()));
  int64_t d = wrap_dim(dim, x.dim(), "index_select");
  // A 0-dim result has room for one element only.
  TD_CHECK(x.dim() > 0 || index.numel() == 1, "index_select: the index into a 0-dim tensor must hold exactly one ",
           "value, got ", index.numel());
  int64_t size = x.dim() == 0 ? 1 : x.sizes()[d];
  check_index_range(index, size, "index_select", "dim " + std::to_string(d));
  Shape shape = x.sizes();
  if (x.dim() > 0) shape[d] = index.numel();
  Tensor out = empty_tensor(shape, x.dtype(), x.device());
  Tensor xc = contiguous(x), ic = contiguous(to(index, kInt64));
  x.is_cuda() ? cuda::index_select(out, xc, d, ic) : cpu::index_select(out, xc, d, ic);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_defined(x, "gather", "input");
  check_defined(index, "gather", "index");
  common_device("gather", {&x, &index});
  check_index_dtype(index, "gather");
  int64_t d = wrap_dim(dim, x.dim(), "gather");
  TD_CHECK(index.dim() == x.dim() || (index.dim() <= 1 && x.dim() <= 1), "gather: index ",
           shape_str(index.sizes()), " and input ", shape_str(x.sizes()), " must have the same number of dimensions");
  for (int64_t k = 0; k < index.dim() && x.dim() > 0; ++k) {
    TD_CHECK(k == d || index.sizes()[k] <= x.sizes()[k], "gather: index of shape ", shape_str(index.sizes()),
             " is larger than the input ", shape_str(x.sizes()), " in dim ", k);
  }
  check_index_range(index, x.dim() == 0 ? 1 : x.sizes()[d], "gather", "dim " + std::to_string(d));
  Tensor out = empty_tensor(index.sizes(), x.dtype(), x.device());
  Tensor i64 = to(index, kInt64);
  x.is_cuda() ? cuda::gather(out, x, d, i64) : cpu::gather(out, x, d, i64);
  return out;
}

namespace {

// The checks of the scatter forms (`op` names the one called); the dim, wrapped.
int64_t check_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  check_defined(x, op, "self");
  check_defined(index, op, "index");
  check_defined(src, op, "src");
  common_device(op, {&x, &index, &src});
  check_index_dtype(index, op);
  TD_CHECK(src.dtype() == x.dtype(), op, ": expected src of dtype ", x.dtype(), ", got ", src.dtype());
  int64_t d = wrap_dim(dim, x.dim(), op);
  TD_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), op, ": self ", shape_str(x.sizes()), ", index ",
           shape_str(index.sizes()), " and src ", shape_str(src.sizes()), " must have the same number of dimensions");
  for (int64_t k = 0; k < index.dim(); ++k) {
    TD_CHECK(index.sizes()[k] <= src.sizes()[k] && (k == d || index.sizes()[k] <= x.sizes()[k]), op,
             ": index of shape ", shape_str(index.sizes()), " is larger than src ", shape_str(src.sizes()), " or self ",
             shape_str(x.sizes()), " in dim ", k);
  }
  check_index_range(index, x.dim() == 0 ? 1 : x.sizes()[d], op, "dim " + std::to_string(d));
  check_no_internal_overlap(x, op);
  check_no_overlap(x, src, op, "src");
  check_no_overlap(x, index, op, "index");
  return d;
}

// scatter_add (accumulate) or scatter into x.
Tensor& scatter_into(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool in_place, bool accumulate,
                     const char* op) {
  TD_CHECK(!accumulate || !x.defined() || x.dtype() != kBool, op, ": bool tensors are not supported");
  const int64_t d = check_scatter(x, dim, index, src, op);
  Tensor i64 = to(index, kInt64);
  if (accumulate) {
    x.is_cuda() ? cuda::scatter_add(x, d, i64, src) : cpu::scatter_add(x, d, i64, src);
  } else {
    x.is_cuda() ? cuda::scatter(x, d, i64, src) : cpu::scatter(x, d, i64, src);
  }
  if (in_place) x.bump_version();
  return x;
}

// value as a src of index's shape: one element seen at every position.
Tensor value_source(const Tensor& x, const Tensor& index, Scalar value, const char* op) {
  check_defined(x, op, "self");
  check_defined(index, op, "index");
  check_value_fits(value, x.dtype(), op);
  return expand(detail::scalar_tensor(value, x.dtype(), x.device()), index.sizes());
}

}  // namespace

Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_into(x, dim, index, src, true, true, "scatter_add_");
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined(x, "scatter_add", "input");
  Tensor out = clone(x);
  return scatter_into(out, dim, index, src, false, true, "scatter_add");
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_into(x, dim, index, src, true, false, "scatter_");
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return scatter_(x, dim, index, value_source(x, index, value, "scatter_"));
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_defined(x, "scatter", "input");
  Tensor out = clone(x);
  return scatter_into(out, dim, index, src, false, false, "scatter");
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  return scatter(x, dim, index, value_source(x, index, value, "scatter"));
}

namespace {

enum class Reduction { Sum, Prod, Mean, Max, Min };

Reduction reduction_of(const std::string& reduce, const char* op) {
  if (reduce == "sum") return Reduction::Sum;
  if (reduce == "prod") return Reduction::Prod;
  if (reduce == "mean") return Reduction::Mean;
  if (reduce == "amax") return Reduction::Max;
  TD_CHECK(reduce == "amin", op, ": reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  return Reduction::Min;
}

// What a reduction starts from: its identity (the lowest value for amax, the highest for amin).
Scalar identity_of(Reduction r, DType dtype) {
  switch (r) {
    case Reduction::Sum:
    case Reduction::Mean:
      return dtype == kBool ? Scalar(false) : Scalar(0);
    case Reduction::Prod:
      return dtype == kBool ? Scalar(true) : Scalar(1);
    case Reduction::Max:
    case Reduction::Min: {
      const bool max = r == Reduction::Max;
      if (dtype == kBool) return Scalar(!max);
      if (is_floating(dtype))
        return Scalar(max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
      const auto [lo, hi] = integer_range(dtype);
      return Scalar(max ? lo : hi);
    }
  }
  return Scalar(0);
}

Tensor& scatter_reduce_into(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                            bool include_self, bool in_place, const char* op) {
  const Reduction r = reduction_of(reduce, op);
  const int64_t d = check_scatter(x, dim, index, src, op);
  TD_CHECK(r != Reduction::Mean || x.dtype() != kBool, op, ": reduce \"mean\" is not supported for bool tensors");
  const Tensor i64 = to(index, kInt64);
  const auto scatter_value = [&](const Tensor& target, Scalar value) {
    const Tensor values = expand(detail::scalar_tensor(value, target.dtype(), target.device()), index.sizes());
    target.is_cuda() ? cuda::scatter(target, d, i64, values) : cpu::scatter(target, d, i64, values);
  };
  // Without self, the places anything lands on start from the reduction's identity.
  if (!include_self) scatter_value(x, identity_of(r, x.dtype()));
  // bool's sum is its or, which is its maximum.
  const Reduction run = r == Reduction::Sum && x.dtype() == kBool ? Reduction::Max : r;
  switch (run) {
    case Reduction::Sum:
    case Reduction::Mean:
      x.is_cuda() ? cuda::scatter_add(x, d, i64, src) : cpu::scatter_add(x, d, i64, src);
      break;
    case Reduction::Prod:
    case Reduction::Max:
    case Reduction::Min: {
      const ScatterReduce kind = run == Reduction::Prod  ? ScatterReduce::Prod
                                 : run == Reduction::Max ? ScatterReduce::Max
                                                         : ScatterReduce::Min;
      x.is_cuda() ? cuda::scatter_reduce(x, d, i64, src, kind) : cpu::scatter_reduce(x, d, i64, src, kind);
      break;
    }
  }
  if (r == Reduction::Mean) {
    // The sum over how many took part (integers: floored, as PyTorch's); places nothing lands on keep x.
    Tensor counts = full(x.sizes(), include_self ? 1 : 0, TensorOptions(x.dtype()).device(x.device()));
    const Tensor ones_at = expand(detail::scalar_tensor(1, x.dtype(), x.device()), index.sizes());
    counts.is_cuda() ? cuda::scatter_add(counts, d, i64, ones_at) : cpu::scatter_add(counts, d, i64, ones_at);
    const Tensor safe = where(eq(counts, 0), 1, counts);
    copy_into(x, is_floating(x.dtype()) ? div(x, safe) : floor_divide(x, safe));
  }
  if (in_place) x.bump_version();
  return x;
}

}  // namespace

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  check_defined(x, "scatter_reduce", "input");
  Tensor out = clone(x);
  return scatter_reduce_into(out, dim, index, src, reduce, include_self, false, "scatter_reduce");
}

Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                        bool include_self) {
  return scatter_reduce_into(x, dim, index, src, reduce, include_self, true, "scatter_reduce_");
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  check_defined(weight, "embedding", "weight");
  check_defined(indices, "embedding", "indices");
  TD_CHECK(weight.dim() == 2, "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape ",
           shape_str(weight.sizes()));
  check_index_dtype(indices, "embedding");
  check_index_range(indices, weight.sizes()[0], "embedding", "a weight with rows");
  Shape shape = indices.sizes();
  shape.push_back(weight.sizes()[1]);
  return view(index_select(weight, 0, reshape(indices, {-1})), shape);
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  check_defined(indices, "one_hot", "indices");
  TD_CHECK(indices.dtype() == kInt64, "one_hot: expected an int64 index tensor, got ", indices.dtype());
  if (num_classes == -1) {
    TD_CHECK(indices.numel() > 0, "one_hot: cannot infer the number of classes from an empty tensor");
    num_classes = item(amax(indices)).to_int() + 1;
  }
  TD_CHECK(num_classes >= 0, "one_hot: num_classes must be -1 or non-negative, got ", num_classes);
  check_index_range(indices, num_classes, "one_hot", "num_classes");
  Shape shape = indices.sizes();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, TensorOptions(kInt64).device(indices.device()));
  Tensor rows = view(out, {indices.numel(), num_classes}), ic = contiguous(indices);
  indices.is_cuda() ? cuda::one_hot(rows, ic) : cpu::one_hot(rows, ic);
  return out;
}

}  // namespace tandem::kernels
