// CPU 2-D pooling over contiguous [planes, H, W] inputs, one plane per task.
// Max pooling propagates NaN and reports the first maximum's flat index within its plane.
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::cpu {

void max_pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2d& p) {
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1];
  const int64_t oh = out.sizes()[out.dim() - 2], ow = out.sizes()[out.dim() - 1];
  const int64_t planes = oh * ow == 0 ? 0 : out.numel() / (oh * ow);
  int64_t* idx = indices.data_ptr<int64_t>();
  dispatch_numeric(x.dtype(), "max_pool2d", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* in = src + plane * h * w;
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            const int64_t h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
            // A window wholly in the padding (possible with dilation) gives -inf and index -1.
            M best = std::numeric_limits<M>::has_infinity ? -std::numeric_limits<M>::infinity()
                                                          : std::numeric_limits<M>::lowest();
            int64_t best_at = -1;
            for (int64_t a = 0; a < p.kh; ++a) {
              const int64_t y = h0 + a * p.dh;
              if (y < 0 || y >= h) continue;
              for (int64_t b = 0; b < p.kw; ++b) {
                const int64_t xw = w0 + b * p.dw;
                if (xw < 0 || xw >= w) continue;
                const M v = static_cast<M>(in[y * w + xw]);
                if (best_at < 0 || v > best || std::isnan(static_cast<double>(v))) {
                  if (best_at >= 0 && std::isnan(static_cast<double>(best))) continue;
                  best = v;
                  best_at = y * w + xw;
                }
              }
            }
            const int64_t o = (plane * oh + i) * ow + j;
            dst[o] = static_cast<T>(best);
            idx[o] = best_at;
          }
        }
      }
    });
  });
}

void avg_pool2d(const Tensor& out, const Tensor& x, const Pool2d& p, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1];
  const int64_t oh = out.sizes()[out.dim() - 2], ow = out.sizes()[out.dim() - 1];
  const int64_t planes = oh * ow == 0 ? 0 : out.numel() / (oh * ow);
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<typename T>() {
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* in = src + plane * h * w;
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            // The window within the padded input, then clipped to the real one.
            int64_t h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
            int64_t h1 = std::min(h0 + p.kh, h + p.ph), w1 = std::min(w0 + p.kw, w + p.pw);
            const int64_t padded_count = (h1 - h0) * (w1 - w0);
            h0 = std::max<int64_t>(h0, 0);
            w0 = std::max<int64_t>(w0, 0);
            h1 = std::min(h1, h);
            w1 = std::min(w1, w);
            double sum = 0;
            for (int64_t y = h0; y < h1; ++y) {
              for (int64_t xw = w0; xw < w1; ++xw) sum += static_cast<double>(static_cast<opmath_t<T>>(in[y * w + xw]));
            }
            const int64_t divisor = divisor_override ? *divisor_override
                                    : count_include_pad ? padded_count
                                                        : (h1 - h0) * (w1 - w0);
            dst[(plane * oh + i) * ow + j] = static_cast<T>(static_cast<opmath_t<T>>(sum / static_cast<double>(divisor)));
          }
        }
      }
    });
  });
}

}  // namespace tandem::cpu
