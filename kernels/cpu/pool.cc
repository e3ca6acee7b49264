// CPU 2-D pooling over contiguous [planes, H, W] inputs, one plane per task (one row of windows per task for
// the 2x2 windows of stride 2).
// Max pooling propagates NaN and reports the first maximum's flat index within its plane (the
// last NaN's, where the window holds NaNs, as PyTorch does).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

namespace {

// A window's maximum, kept without a branch per element (on real data the comparison goes
// either way at random, and mispredicted branches cost more than the rest of the kernel): the
// largest value and its first position, and apart from it the last NaN's position, which wins
// if there is one (NaN propagates; PyTorch reports the last NaN of the window, row by row).
template <typename M>
inline void take_max(M v, int64_t at, M& best, int64_t& best_at, int64_t& nan_at) {
  const bool larger = v > best;  // false where either is NaN
  best = larger ? v : best;
  best_at = larger ? at : best_at;
  nan_at = v != v ? at : nan_at;
}

// The taps k in [0, taps) whose position start + k * step lies in [0, size): [*lo, *hi).
void taps_inside(int64_t start, int64_t step, int64_t taps, int64_t size, int64_t* lo, int64_t* hi) {
  *lo = start >= 0 ? 0 : (-start + step - 1) / step;
  *hi = start >= size ? 0 : std::min(taps, (size - start + step - 1) / step);
}

// The windows of the usual 2x2 pooling with stride 2, all inside the input: a window's four taps
// are two neighbours on each of two rows, so a row of windows is one pass of selects over two
// input rows, which the compiler vectorizes (the general loops below, with their strides and
// bounds known only at run time, are several times slower on such small windows).
template <typename T>
void max_pool_2x2(T* dst, int64_t* idx, const T* src, int64_t planes, int64_t h, int64_t w, int64_t oh,
                  int64_t ow) {
  using M = opmath_t<T>;
  parallel_for(0, planes * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(ow, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t plane = row / oh, i = row % oh;
      const T* __restrict in = src + plane * h * w;
      T* __restrict o = dst + row * ow;
      int64_t* __restrict at_out = idx + row * ow;
      const int64_t top = 2 * i * w;
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t first = top + 2 * j;
        M best = static_cast<M>(in[first]), nan_value = best;
        int64_t best_at = first, nan_at = best != best ? first : -1;
        auto take = [&](int64_t at) {
          const M v = static_cast<M>(in[at]);
          nan_value = v != v ? v : nan_value;
          take_max(v, at, best, best_at, nan_at);
        };
        take(first + 1);
        take(first + w);
        take(first + w + 1);
        o[j] = static_cast<T>(nan_at >= 0 ? nan_value : best);
        at_out[j] = nan_at >= 0 ? nan_at : best_at;
      }
    }
  });
}

}  // namespace

void max_pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2d& p) {
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1];
  const int64_t oh = out.sizes()[out.dim() - 2], ow = out.sizes()[out.dim() - 1];
  const int64_t planes = oh * ow == 0 ? 0 : out.numel() / (oh * ow);
  int64_t* idx = indices.data_ptr<int64_t>();
  if (p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0 && p.dh == 1 && p.dw == 1 &&
      2 * oh <= h && 2 * ow <= w) {
    dispatch_numeric(x.dtype(), "max_pool2d", [&]<typename T>() {
      max_pool_2x2(static_cast<T*>(out.data_ptr()), idx, static_cast<const T*>(x.data_ptr()), planes, h, w, oh, ow);
    });
    return;
  }
  // Each window's taps inside the input, worked out once for all planes; the windows wholly
  // inside along w are the columns [inner_lo, inner_hi).
  std::vector<int64_t> rows(2 * oh), columns(2 * ow);
  for (int64_t i = 0; i < oh; ++i) taps_inside(i * p.sh - p.ph, p.dh, p.kh, h, &rows[2 * i], &rows[2 * i + 1]);
  for (int64_t j = 0; j < ow; ++j) taps_inside(j * p.sw - p.pw, p.dw, p.kw, w, &columns[2 * j], &columns[2 * j + 1]);
  int64_t inner_lo = 0, inner_hi = 0;
  for (int64_t j = 0; j < ow; ++j) {
    if (columns[2 * j] != 0 || columns[2 * j + 1] != p.kw) continue;
    if (inner_hi == 0) inner_lo = j;
    inner_hi = j + 1;
  }
  dispatch_numeric(x.dtype(), "max_pool2d", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    const M lowest = std::numeric_limits<M>::has_infinity ? -std::numeric_limits<M>::infinity()
                                                          : std::numeric_limits<M>::lowest();
    parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
      std::vector<M> best_row(static_cast<size_t>(ow));
      std::vector<int64_t> at_row(static_cast<size_t>(ow)), nan_row(static_cast<size_t>(ow));
      M* __restrict best = best_row.data();
      int64_t* __restrict best_at = at_row.data();
      int64_t* __restrict nan_at = nan_row.data();
      for (int64_t plane = begin; plane < end; ++plane) {
        const T* __restrict in = src + plane * h * w;
        for (int64_t i = 0; i < oh; ++i) {
          const int64_t h0 = i * p.sh - p.ph, a0 = rows[2 * i], a1 = rows[2 * i + 1];
          for (int64_t j = 0; j < ow; ++j) {  // a window wholly in the padding keeps these
            best[j] = lowest;
            best_at[j] = nan_at[j] = -1;
          }
          if (a0 < a1) {
            // Tap by tap over the row of windows inside along w (a loop of selects), then the
            // windows that the padding cuts along w, one by one.
            const int64_t first = (h0 + a0 * p.dh) * w - p.pw;
            for (int64_t j = inner_lo; j < inner_hi; ++j) {
              best_at[j] = first + j * p.sw;
              best[j] = static_cast<M>(in[best_at[j]]);
            }
            // Locals, not the captured references: the stores below might alias those as far as
            // the compiler knows, and then it does not vectorize.
            const int64_t lo = inner_lo, hi = inner_hi, step = p.sw;
            for (int64_t a = a0; a < a1; ++a) {
              for (int64_t b = 0; b < p.kw; ++b) {
                const int64_t tap = (h0 + a * p.dh) * w - p.pw + b * p.dw;
                for (int64_t j = lo; j < hi; ++j) {
                  const int64_t at = tap + j * step;
                  take_max(static_cast<M>(in[at]), at, best[j], best_at[j], nan_at[j]);
                }
              }
            }
            for (int64_t j = 0; j < ow; ++j) {
              if (j >= inner_lo && j < inner_hi) continue;
              const int64_t w0 = j * p.sw - p.pw, b0 = columns[2 * j], b1 = columns[2 * j + 1];
              if (b0 >= b1) continue;
              for (int64_t a = a0; a < a1; ++a) {
                for (int64_t b = b0; b < b1; ++b) {
                  const int64_t at = (h0 + a * p.dh) * w + w0 + b * p.dw;
                  if (best_at[j] < 0) {
                    best_at[j] = at;
                    best[j] = static_cast<M>(in[at]);
                  }
                  take_max(static_cast<M>(in[at]), at, best[j], best_at[j], nan_at[j]);
                }
              }
            }
          }
          const int64_t o = (plane * oh + i) * ow;
          for (int64_t j = 0; j < ow; ++j) {
            const bool nan = nan_at[j] >= 0;
            dst[o + j] = static_cast<T>(nan ? static_cast<M>(in[nan_at[j]]) : best[j]);
            idx[o + j] = nan ? nan_at[j] : best_at[j];
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

void max_pool2d_backward(const Tensor& grad_input, const Tensor& grad, const Tensor& indices) {
  const int64_t h = grad_input.sizes()[grad_input.dim() - 2], w = grad_input.sizes()[grad_input.dim() - 1];
  const int64_t oh = grad.sizes()[grad.dim() - 2], ow = grad.sizes()[grad.dim() - 1];
  const int64_t plane = h * w, out_plane = oh * ow;
  const int64_t planes = plane == 0 ? 0 : grad_input.numel() / plane;
  const int64_t* idx = indices.data_ptr<int64_t>();
  dispatch_numeric(grad.dtype(), "max_pool2d_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(grad.data_ptr());
    T* dst = static_cast<T*>(grad_input.data_ptr());
    parallel_for(0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(plane, 1)), [&](int64_t begin, int64_t end) {
      std::vector<M> acc(static_cast<size_t>(plane));  // sums in op-math (windows may overlap), rounded once
      for (int64_t q = begin; q < end; ++q) {
        std::fill(acc.begin(), acc.end(), M(0));
        const T* g = src + q * out_plane;
        const int64_t* at = idx + q * out_plane;
        for (int64_t k = 0; k < out_plane; ++k) {
          const int64_t i = at[k];
          if (i == -1) continue;  // a window wholly in the padding took nothing
          TD_CHECK(i >= 0 && i < plane, "max_pool2d_backward: index ", i, " at output ", q * out_plane + k,
                   " is outside its ", h, "x", w, " input plane");
          acc[i] += static_cast<M>(g[k]);
        }
        T* out = dst + q * plane;
        for (int64_t k = 0; k < plane; ++k) out[k] = static_cast<T>(acc[k]);
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
