// CPU im2col / col2im on contiguous [N, C, H, W] images and [N, C*kh*kw, OH*OW] columns.
// Row (c, a, b) of the columns holds input channel c shifted by kernel offset (a, b). col2im
// works one (image, channel) plane per task, so the overlapping sums have a fixed order.
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

void im2col(const Tensor& cols, const Tensor& x, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  const int64_t rows = g.n * g.c * p.kh * p.kw, width = g.oh * g.ow;
  dispatch_all(x.dtype(), "im2col", [&]<typename T>() {
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(cols.data_ptr());
    parallel_for(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t b = row % p.kw, a = (row / p.kw) % p.kh, plane = row / (p.kw * p.kh);  // plane = n * C + c
        const T* in = src + plane * g.h * g.w;
        T* out = dst + row * width;
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t y = i * p.sh - p.ph + a * p.dh;
          for (int64_t j = 0; j < g.ow; ++j) {
            const int64_t xw = j * p.sw - p.pw + b * p.dw;
            out[i * g.ow + j] = (y >= 0 && y < g.h && xw >= 0 && xw < g.w) ? in[y * g.w + xw] : T(0);
          }
        }
      }
    });
  });
}

void col2im(const Tensor& x, const Tensor& cols, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  const int64_t width = g.oh * g.ow;
  dispatch_numeric(x.dtype(), "col2im", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(cols.data_ptr());
    T* dst = static_cast<T*>(x.data_ptr());
    parallel_for(0, g.n * g.c, 1, [&](int64_t begin, int64_t end) {
      std::vector<M> acc(static_cast<size_t>(g.h * g.w));  // sums in op-math, rounded once
      for (int64_t plane = begin; plane < end; ++plane) {
        T* out = dst + plane * g.h * g.w;
        for (int64_t k = 0; k < g.h * g.w; ++k) acc[k] = static_cast<M>(out[k]);
        for (int64_t a = 0; a < p.kh; ++a) {
          for (int64_t b = 0; b < p.kw; ++b) {
            const T* in = src + ((plane * p.kh + a) * p.kw + b) * width;
            for (int64_t i = 0; i < g.oh; ++i) {
              const int64_t y = i * p.sh - p.ph + a * p.dh;
              if (y < 0 || y >= g.h) continue;
              for (int64_t j = 0; j < g.ow; ++j) {
                const int64_t xw = j * p.sw - p.pw + b * p.dw;
                if (xw >= 0 && xw < g.w) acc[y * g.w + xw] += static_cast<M>(in[i * g.ow + j]);
              }
            }
          }
        }
        for (int64_t k = 0; k < g.h * g.w; ++k) out[k] = static_cast<T>(acc[k]);
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
