// Shapes and the arithmetic on them: lists of sizes, wrapping negative dims, broadcasting, strides.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

namespace tandem {

using Shape = std::vector<int64_t>;

// A borrowed list of integers: {2, 3}, a std::vector, or a single value (as LibTorch's IntArrayRef).
// It does not own its values, so it is for parameters only.
class IntList {
 public:
  IntList() = default;
  IntList(const int64_t& one) : data_(&one), size_(1) {}
  // The braced list lives until the end of the full expression holding the call: long enough
  // for a parameter, which is all IntList is for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  IntList(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}
#pragma GCC diagnostic pop
  IntList(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  IntList(const std::array<int64_t, N>& a) : data_(a.data()), size_(N) {}

  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  Shape vec() const { return Shape(begin(), end()); }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

int64_t numel_of(IntList sizes);
Shape contiguous_strides(IntList sizes);

// Maps dim in [-ndim, ndim) to [0, ndim); `op` names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// Wraps each dim and rejects repeats; returns a mask of ndim flags.
std::vector<bool> dim_mask(IntList dims, int64_t ndim, const char* op);

// The shape two shapes broadcast to (numpy rules), or a tandem::Error naming `op` and both shapes.
Shape broadcast_shapes(IntList a, IntList b, const char* op);

// Replaces a single -1 in `shape` by what makes its product `numel`; checks the product.
Shape infer_size(IntList shape, int64_t numel, const char* op);

// Strides for viewing (sizes, strides) as `new_sizes` without copying, if possible (PyTorch's rule:
// only dims that are contiguous with each other may be merged or split).
std::optional<Shape> view_strides(IntList sizes, IntList strides, IntList new_sizes);

}  // namespace tandem
