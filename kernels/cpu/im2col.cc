// CPU im2col / col2im on contiguous [N, C, H, W] images and [N, C*kh*kw, OH*OW] columns whose
// last dim is contiguous (the first two may have any strides: convolution lays them out as
// [C*kh*kw, N, OH*OW]). Row (c, a, b) of the columns holds input channel c shifted by kernel
// offset (a, b). col2im works one (image, channel) plane per task, so the overlapping sums have
// a fixed order.
#include <algorithm>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

namespace {

// The output columns j in [0, ow) whose input column j * stride + offset lies in [0, w): [lo, hi).
struct Inside {
  int64_t lo, hi;
};

Inside columns_inside(int64_t offset, int64_t stride, int64_t ow, int64_t w) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t hi = offset >= w ? 0 : std::min(ow, (w - offset + stride - 1) / stride);
  return {std::min(lo, ow), std::max(hi, std::min(lo, ow))};
}

}  // namespace

void im2col(const Tensor& cols, const Tensor& x, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  const int64_t fields = g.c * p.kh * p.kw, width = g.oh * g.ow;
  const int64_t image_stride = cols.strides()[0], row_stride = cols.strides()[1];
  dispatch_all(x.dtype(), "im2col", [&]<typename T>() {
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(cols.data_ptr());
    parallel_for(0, g.n * fields, std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)),
                 [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n = task / fields, row = task % fields;
        const int64_t b = row % p.kw, a = (row / p.kw) % p.kh, c = row / (p.kw * p.kh);
        const T* in = src + (n * g.c + c) * g.h * g.w;
        T* out = dst + n * image_stride + row * row_stride;
        const int64_t offset = b * p.dw - p.pw, step = p.sw;
        const Inside inside = columns_inside(offset, step, g.ow, g.w);
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t y = i * p.sh - p.ph + a * p.dh;
          T* o = out + i * g.ow;
          if (y < 0 || y >= g.h) {
            std::fill(o, o + g.ow, T(0));
            continue;
          }
          const int64_t line = y * g.w + offset;  // may be negative: j starts inside
          std::fill(o, o + inside.lo, T(0));
          for (int64_t j = inside.lo; j < inside.hi; ++j) o[j] = in[line + j * step];
          std::fill(o + inside.hi, o + g.ow, T(0));
        }
      }
    });
  });
}

void col2im(const Tensor& x, const Tensor& cols, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  const int64_t image_stride = cols.strides()[0], row_stride = cols.strides()[1];
  dispatch_numeric(x.dtype(), "col2im", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(cols.data_ptr());
    T* dst = static_cast<T*>(x.data_ptr());
    parallel_for(0, g.n * g.c, 1, [&](int64_t begin, int64_t end) {
      std::vector<M> acc(static_cast<size_t>(g.h * g.w));  // sums in op-math, rounded once
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t n = plane / g.c, c = plane % g.c;
        T* out = dst + plane * g.h * g.w;
        for (int64_t k = 0; k < g.h * g.w; ++k) acc[k] = static_cast<M>(out[k]);
        for (int64_t a = 0; a < p.kh; ++a) {
          for (int64_t b = 0; b < p.kw; ++b) {
            const T* in = src + n * image_stride + ((c * p.kh + a) * p.kw + b) * row_stride;
            const int64_t offset = b * p.dw - p.pw, step = p.sw;
            const Inside inside = columns_inside(offset, step, g.ow, g.w);
            for (int64_t i = 0; i < g.oh; ++i) {
              const int64_t y = i * p.sh - p.ph + a * p.dh;
              if (y < 0 || y >= g.h) continue;
              const int64_t line = y * g.w + offset;  // may be negative: j starts inside
              M* sums = acc.data();
              const T* from = in + i * g.ow;
              for (int64_t j = inside.lo; j < inside.hi; ++j) sums[line + j * step] += static_cast<M>(from[j]);
            }
          }
        }
        for (int64_t k = 0; k < g.h * g.w; ++k) out[k] = static_cast<T>(acc[k]);
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
