#include "core/shape.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace tandem {

int64_t numel_of(IntList sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) return 0;  // empty, however large the other sizes
    overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  }
  TD_CHECK(!overflow, "shape ", shape_str(sizes.vec()), " has more elements than an int64 counts (2^63 - 1)");
  return n;
}

Shape contiguous_strides(IntList sizes) {
  Shape strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    if (__builtin_mul_overflow(stride, sizes[i] > 1 ? sizes[i] : 1, &stride)) {
      // Only an empty tensor gets here with no error about its elements ([0, 2^62, 4]); its
      // strides are never used to reach an element.
      TD_CHECK(numel_of(sizes) == 0, "shape ", shape_str(sizes.vec()), " has strides beyond what an int64 holds");
      stride = std::numeric_limits<int64_t>::max();
    }
  }
  return strides;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;  // a 0-dim tensor takes dim 0 or -1
  TD_CHECK(dim >= lo && dim <= hi, op, ": dim ", dim, " is out of range for a tensor of ", ndim,
           " dimensions (expected a dim in [", lo, ", ", hi, "])");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

std::vector<bool> dim_mask(IntList dims, int64_t ndim, const char* op) {
  std::vector<bool> mask(ndim > 0 ? ndim : 1, false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    TD_CHECK(!mask[w], op, ": dim ", w, " appears more than once in the list of dims ", shape_str(IntList(dims).vec()));
    mask[w] = true;
  }
  if (ndim == 0) mask.clear();
  return mask;
}

Shape broadcast_shapes(IntList a, IntList b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TD_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", shape_str(a.vec()), " and ", shape_str(b.vec()),
             " cannot be broadcast together (size ", sa, " vs ", sb, " at dim ", i, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

Shape infer_size(IntList shape, int64_t numel, const char* op) {
  Shape out = shape.vec();
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TD_CHECK(infer_at < 0, op, ": only one dimension can be inferred (-1) in ", shape_str(out));
      infer_at = static_cast<int>(i);
    } else {
      TD_CHECK(out[i] >= 0, op, ": invalid size ", out[i], " in shape ", shape_str(out));
      // A product that wraps could land on numel and pass the check below.
      TD_CHECK(!__builtin_mul_overflow(known, out[i], &known), op, ": shape ", shape_str(out),
               " has more elements than an int64 counts (2^63 - 1)");
    }
  }
  if (infer_at >= 0) {
    TD_CHECK(known != 0 && numel % known == 0, op, ": shape ", shape_str(out), " is invalid for input of size ",
             numel);
    out[infer_at] = numel / known;
  } else {
    TD_CHECK(known == numel, op, ": shape ", shape_str(out), " is invalid for input of size ", numel);
  }
  return out;
}

std::optional<Shape> view_strides(IntList sizes, IntList strides, IntList new_sizes) {
  Shape new_strides(new_sizes.size());
  if (new_sizes.empty()) return new_strides;
  if (sizes.empty()) return Shape(new_sizes.size(), 1);  // a 0-dim tensor viewed as [1, 1, ...]
  int64_t numel = numel_of(sizes);
  if (numel == 0) {
    // Any view of an empty tensor works: give it contiguous strides.
    return sizes.vec() == new_sizes.vec() ? strides.vec() : contiguous_strides(new_sizes);
  }
  // Walk the old dims from the innermost, grouping runs that are contiguous with each other;
  // each group's total size must be produced exactly by a run of new dims.
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.size() ? strides[strides.size() - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    bool group_ends = d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (group_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace tandem
