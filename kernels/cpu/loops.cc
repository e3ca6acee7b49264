#include "kernels/cpu/loops.h"

#include <algorithm>

namespace tandem::kernels::cpu::detail {

void make_loop_shape(int n, const Tensor* const* ops, int64_t* sizes, int64_t* strides, char** data, int& ndim,
                     int64_t& numel) {
  const Tensor& out = *ops[0];
  const int64_t rank = out.dim();
  numel = out.numel();
  for (int k = 0; k < n; ++k) data[k] = static_cast<char*>(ops[k]->data_ptr());
  if (numel == 0) {  // nothing to walk (and the strides of a huge empty shape may be saturated)
    ndim = 0;
    return;
  }

  // Dims innermost first, with each operand's byte strides aligned to the output's trailing dims.
  struct Dim {
    int64_t size;
    int64_t stride[8];
  };
  constexpr int64_t kMaxRank = 64;
  TD_CHECK(n <= 8, "loop: too many operands");
  TD_CHECK(rank <= kMaxRank, "loop: tensors of more than ", kMaxRank, " dims are not supported (shape ",
           shape_str(out.sizes()), ")");
  Dim dims[kMaxRank];
  int count = 0;
  for (int64_t d = rank - 1; d >= 0; --d) {
    Dim dim{out.sizes()[d], {}};
    if (dim.size == 1) continue;
    for (int k = 0; k < n; ++k) {
      const Tensor& t = *ops[k];
      int64_t td = d - (rank - t.dim());
      bool broadcast = td < 0 || t.sizes()[td] == 1;
      dim.stride[k] = broadcast ? 0 : t.strides()[td] * static_cast<int64_t>(t.element_size());
    }
    dims[count++] = dim;
  }

  // Order dims so the output walks its memory forwards (matters when it is permuted):
  // a dim goes inside another when the first operand that tells them apart has the smaller stride.
  auto inner_first = [n](const Dim& a, const Dim& b) {
    for (int k = 0; k < n; ++k) {
      int64_t sa = a.stride[k] < 0 ? -a.stride[k] : a.stride[k];
      int64_t sb = b.stride[k] < 0 ? -b.stride[k] : b.stride[k];
      if (sa == 0 || sb == 0 || sa == sb) continue;
      return sa < sb;
    }
    return false;
  };
  for (int i = 1; i < count; ++i) {  // insertion sort: stable, and fine with this partial order
    for (int j = i; j > 0 && inner_first(dims[j], dims[j - 1]); --j) std::swap(dims[j], dims[j - 1]);
  }

  // Merge a dim into the one inside it when every operand continues evenly across the boundary.
  Dim merged[kMaxRank];
  int merged_count = 0;
  for (int i = 0; i < count; ++i) {
    const Dim& d = dims[i];
    if (merged_count > 0) {
      Dim& inner = merged[merged_count - 1];
      bool even = true;
      for (int k = 0; k < n && even; ++k) even = d.stride[k] == inner.stride[k] * inner.size;
      if (even) {
        inner.size *= d.size;
        continue;
      }
    }
    merged[merged_count++] = d;
  }
  TD_CHECK(merged_count <= kMaxLoopDims, "loop: ", merged_count,
           " non-mergeable dims exceed the supported ", kMaxLoopDims, " (shape ", shape_str(out.sizes()), ")");
  ndim = merged_count;
  for (int d = 0; d < ndim; ++d) {
    sizes[d] = merged[d].size;
    for (int k = 0; k < n; ++k) strides[d * n + k] = merged[d].stride[k];
  }
}

}  // namespace tandem::kernels::cpu::detail
