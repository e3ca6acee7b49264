// CPU 2-D pooling over contiguous [planes, H, W] inputs, one plane per task.
// Max pooling propagates NaN and reports the first maximum's flat index within its plane.
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

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

namespace {

// An average-pool window: rows [h0, h1) and columns [w0, w1) of the input, and its divisor.
struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

Window window(int64_t i, int64_t j, int64_t h, int64_t w, const Pool2d& p, bool count_include_pad,
              std::optional<int64_t> divisor_override) {
  // The window within the padded input, then clipped to the real one.
  int64_t h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
  int64_t h1 = std::min(h0 + p.kh, h + p.ph), w1 = std::min(w0 + p.kw, w + p.pw);
  const int64_t padded_count = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, h);
  w1 = std::min(w1, w);
  const int64_t divisor = divisor_override ? *divisor_override
                          : count_include_pad ? padded_count
                                              : (h1 - h0) * (w1 - w0);
  return Window{h0, h1, w0, w1, divisor};
}

}  // namespace

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
            Window win = window(i, j, h, w, p, count_include_pad, divisor_override);
            double sum = 0;
            for (int64_t y = win.h0; y < win.h1; ++y) {
              for (int64_t xw = win.w0; xw < win.w1; ++xw) sum += static_cast<double>(static_cast<opmath_t<T>>(in[y * w + xw]));
            }
            dst[(plane * oh + i) * ow + j] = static_cast<T>(static_cast<opmath_t<T>>(sum / static_cast<double>(win.divisor)));
          }
        }
      }
    });
  });
}

void avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad, const Pool2d& p, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const int64_t h = grad_input.sizes()[grad_input.dim() - 2], w = grad_input.sizes()[grad_input.dim() - 1];
  const int64_t oh = grad.sizes()[grad.dim() - 2], ow = grad.sizes()[grad.dim() - 1];
  const int64_t planes = oh * ow == 0 ? 0 : grad.numel() / (oh * ow);
  dispatch_floating(grad.dtype(), "avg_pool2d_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(grad.data_ptr());
    T* dst = static_cast<T*>(grad_input.data_ptr());
    parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
      std::vector<M> acc(static_cast<size_t>(h * w));  // sums in op-math, rounded once
      for (int64_t plane = begin; plane < end; ++plane) {
        std::fill(acc.begin(), acc.end(), M(0));
        const T* g = src + plane * oh * ow;
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            Window win = window(i, j, h, w, p, count_include_pad, divisor_override);
            const M share = static_cast<M>(g[i * ow + j]) / static_cast<M>(win.divisor);
            for (int64_t y = win.h0; y < win.h1; ++y) {
              for (int64_t xw = win.w0; xw < win.w1; ++xw) acc[y * w + xw] += share;
            }
          }
        }
        T* out = dst + plane * h * w;
        for (int64_t k = 0; k < h * w; ++k) out[k] = static_cast<T>(acc[k]);
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
