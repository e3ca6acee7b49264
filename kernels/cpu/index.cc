// CPU indexing kernels. gather and scatter_add walk "lines": all positions that share every
// index but the one along `dim`. Lines are independent (scatter_add's lines write disjoint
// elements), so they run in parallel while each line keeps its order.
#include <cstring>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

namespace {

// Element offsets of each line's start in several tensors laid over one shape.
struct Lines {
  Shape sizes;                       // the shape without `dim`
  std::vector<Shape> strides;        // per tensor, without `dim`
  std::vector<int64_t> dim_strides;  // per tensor, along `dim` (0 for 0-dim tensors)
  int64_t length = 1, count = 1;

  Lines(const Shape& shape, int64_t dim, const std::vector<const Tensor*>& tensors) {
    for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) {
      if (k == dim) {
        length = shape[k];
      } else {
        sizes.push_back(shape[k]);
        count *= shape[k];
      }
    }
    for (const Tensor* t : tensors) {
      Shape s;
      for (int64_t k = 0; k < t->dim(); ++k) {
        if (k != dim) s.push_back(t->strides()[k]);
      }
      strides.push_back(s);
      dim_strides.push_back(t->dim() == 0 ? 0 : t->strides()[dim]);
    }
    if (length == 0) count = 0;
  }

  int64_t offset(int64_t line, size_t tensor) const {
    int64_t off = 0;
    for (size_t k = sizes.size(); k-- > 0;) {
      off += (line % sizes[k]) * strides[tensor][k];
      line /= sizes[k];
    }
    return off;
  }
};

}  // namespace

void index_select(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t outer = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin(), x.sizes().begin() + dim));
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[dim];
  const int64_t inner = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin() + dim + 1, x.sizes().end()));
  const int64_t n = index.numel();
  const int64_t* idx = index.data_ptr<int64_t>();
  const size_t row_bytes = static_cast<size_t>(inner) * x.element_size();
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  parallel_for(0, outer * n, std::max<int64_t>(1, 65536 / std::max<size_t>(row_bytes, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t o = row / n, i = row % n;
      std::memcpy(dst + row * row_bytes, src + (o * size + idx[i]) * row_bytes, row_bytes);
    }
  });
}

void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  Lines lines(index.sizes(), dim, {&out, &index, &x});
  const int64_t* idx = index.data_ptr<int64_t>();
  dispatch_all(x.dtype(), "gather", [&]<typename T>() {
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(0, lines.count, std::max<int64_t>(1, 4096 / std::max<int64_t>(lines.length, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t line = b; line < e; ++line) {
                     T* o = dst + lines.offset(line, 0);
                     const int64_t* i = idx + lines.offset(line, 1);
                     const T* s = src + lines.offset(line, 2);
                     for (int64_t k = 0; k < lines.length; ++k) {
                       o[k * lines.dim_strides[0]] = s[i[k * lines.dim_strides[1]] * lines.dim_strides[2]];
                     }
                   }
                 });
  });
}

namespace {

// src's elements combined into self at index's positions along dim: target = combine(target, value),
// in op-math (float for the 16-bit floats). Each line writes only its own line of self, in order:
// of several writes to one place (scatter's) the last one stays.
template <typename T, typename Combine>
void scatter_lines(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Combine combine) {
  using M = opmath_t<T>;
  Lines lines(index.sizes(), dim, {&self, &index, &src});
  const int64_t* idx = index.data_ptr<int64_t>();
  T* dst = static_cast<T*>(self.data_ptr());
  const T* from = static_cast<const T*>(src.data_ptr());
  parallel_for(
      0, lines.count, std::max<int64_t>(1, 4096 / std::max<int64_t>(lines.length, 1)), [&](int64_t b, int64_t e) {
        for (int64_t line = b; line < e; ++line) {
          T* o = dst + lines.offset(line, 0);
          const int64_t* i = idx + lines.offset(line, 1);
          const T* s = from + lines.offset(line, 2);
          for (int64_t k = 0; k < lines.length; ++k) {
            T& target = o[i[k * lines.dim_strides[1]] * lines.dim_strides[0]];
            target = static_cast<T>(combine(static_cast<M>(target), static_cast<M>(s[k * lines.dim_strides[2]])));
          }
        }
      });
}

// The second of two values: a plain write.
struct Assign {
  template <typename M>
  M operator()(M, M value) const {
    return value;
  }
};

}  // namespace

void scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  dispatch_numeric(self.dtype(), "scatter_add",
                   [&]<typename T>() { scatter_lines<T>(self, dim, index, src, fn::Add{}); });
}

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  dispatch_all(self.dtype(), "scatter", [&]<typename T>() { scatter_lines<T>(self, dim, index, src, Assign{}); });
}

void scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce kind) {
  dispatch_all(self.dtype(), "scatter_reduce", [&]<typename T>() {
    switch (kind) {
      case ScatterReduce::Prod:
        return scatter_lines<T>(self, dim, index, src, fn::Mul{});
      case ScatterReduce::Max:
        return scatter_lines<T>(self, dim, index, src, fn::Maximum{});
      case ScatterReduce::Min:
        return scatter_lines<T>(self, dim, index, src, fn::Minimum{});
    }
  });
}

void one_hot(const Tensor& out, const Tensor& indices) {
  const int64_t* idx = indices.data_ptr<int64_t>();
  int64_t* dst = out.data_ptr<int64_t>();
  const int64_t classes = out.sizes()[1];
  for (int64_t i = 0; i < indices.numel(); ++i) dst[i * classes + idx[i]] = 1;
}

}  // namespace tandem::kernels::cpu
