// CUDA 2-D pooling and im2col / col2im over contiguous [planes, H, W] images, one thread per output
// element. The backward passes (avg_pool2d_backward, col2im) gather instead of scatter: each input
// element's thread sums what covers it in the CPU's order (kernels/cpu/pool.cc, im2col.cc), so no
// atomics are needed and the results match the CPU's bit for bit.
#include <cuda_runtime.h>

#include <limits>

#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

__device__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// The pool's plane geometry: input H x W, output OH x OW.
struct Planes {
  int64_t h, w, oh, ow;
};

// What avg pooling needs besides the window: whether padding counts, and a fixed divisor (0: none).
struct AvgMode {
  bool count_include_pad;
  int64_t divisor_override;
};

template <typename T>
__global__ void max_pool2d_kernel(T* out, int64_t* indices, const T* x, int64_t n, Planes g, Pool2d p) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(e, n) {
    const int64_t j = e % g.ow, i = (e / g.ow) % g.oh, plane = e / (g.ow * g.oh);
    const T* in = x + plane * g.h * g.w;
    const int64_t h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
    // A window wholly in the padding (possible with dilation) gives -inf and index -1.
    M best = std::numeric_limits<M>::has_infinity ? -std::numeric_limits<M>::infinity()
                                                  : std::numeric_limits<M>::lowest();
    int64_t best_at = -1;
    for (int64_t a = 0; a < p.kh; ++a) {
      const int64_t y = h0 + a * p.dh;
      if (y < 0 || y >= g.h) continue;
      for (int64_t b = 0; b < p.kw; ++b) {
        const int64_t xw = w0 + b * p.dw;
        if (xw < 0 || xw >= g.w) continue;
        const M v = static_cast<M>(in[y * g.w + xw]);
        // The last NaN wins (as PyTorch reports it); otherwise the first maximum.
        if (best_at < 0 || v > best || fn::is_nan(v)) {
          best = v;
          best_at = y * g.w + xw;
        }
      }
    }
    out[e] = static_cast<T>(best);
    indices[e] = best_at;
  }
}

// An average-pool window: rows [h0, h1) and columns [w0, w1) of the input, and its divisor.
struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

__device__ Window window(int64_t i, int64_t j, const Planes& g, const Pool2d& p, const AvgMode& mode) {
  // The window within the padded input, then clipped to the real one.
  int64_t h0 = i * p.sh - p.ph, w0 = j * p.sw - p.pw;
  int64_t h1 = min64(h0 + p.kh, g.h + p.ph), w1 = min64(w0 + p.kw, g.w + p.pw);
  const int64_t padded_count = (h1 - h0) * (w1 - w0);
  h0 = max64(h0, 0);
  w0 = max64(w0, 0);
  h1 = min64(h1, g.h);
  w1 = min64(w1, g.w);
  const int64_t divisor = mode.divisor_override != 0 ? mode.divisor_override
                          : mode.count_include_pad   ? padded_count
                                                     : (h1 - h0) * (w1 - w0);
  return Window{h0, h1, w0, w1, divisor};
}

template <typename T>
__global__ void avg_pool2d_kernel(T* out, const T* x, int64_t n, Planes g, Pool2d p, AvgMode mode) {
  TD_GRID_STRIDE(e, n) {
    const int64_t j = e % g.ow, i = (e / g.ow) % g.oh, plane = e / (g.ow * g.oh);
    const T* in = x + plane * g.h * g.w;
    const Window win = window(i, j, g, p, mode);
    double sum = 0;
    for (int64_t y = win.h0; y < win.h1; ++y) {
      for (int64_t xw = win.w0; xw < win.w1; ++xw) {
        sum += static_cast<double>(static_cast<opmath_t<T>>(in[y * g.w + xw]));
      }
    }
    out[e] = static_cast<T>(static_cast<opmath_t<T>>(sum / static_cast<double>(win.divisor)));
  }
}

// One thread per input element: the windows covering it, rows then columns ascending as the CPU
// visits them, each adding its gradient share in op-math.
template <typename T>
__global__ void avg_pool2d_backward_kernel(T* grad_input, const T* grad, int64_t n, Planes g, Pool2d p,
                                           AvgMode mode) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(e, n) {
    const int64_t xw = e % g.w, y = (e / g.w) % g.h, plane = e / (g.w * g.h);
    const T* gp = grad + plane * g.oh * g.ow;
    // Window i starts at i * sh - ph and spans kh rows: those with y inside it.
    const int64_t i0 = y + p.ph < p.kh ? 0 : (y + p.ph - p.kh) / p.sh + 1, i1 = min64((y + p.ph) / p.sh, g.oh - 1);
    const int64_t j0 = xw + p.pw < p.kw ? 0 : (xw + p.pw - p.kw) / p.sw + 1, j1 = min64((xw + p.pw) / p.sw, g.ow - 1);
    M acc = M(0);
    for (int64_t i = i0; i <= i1; ++i) {
      for (int64_t j = j0; j <= j1; ++j) {
        const Window win = window(i, j, g, p, mode);
        if (y < win.h0 || y >= win.h1 || xw < win.w0 || xw >= win.w1) continue;
        acc += static_cast<M>(gp[i * g.ow + j]) / static_cast<M>(win.divisor);
      }
    }
    grad_input[e] = static_cast<T>(acc);
  }
}

// Row (plane, a, b) of the columns holds the plane shifted by kernel offset (a, b), zero outside it.
template <typename T>
__global__ void im2col_kernel(T* cols, const T* x, int64_t n, ConvGeometry g, Pool2d p) {
  const int64_t width = g.oh * g.ow;
  TD_GRID_STRIDE(e, n) {
    const int64_t col = e % width, row = e / width;
    const int64_t i = col / g.ow, j = col % g.ow;
    const int64_t b = row % p.kw, a = (row / p.kw) % p.kh, plane = row / (p.kw * p.kh);
    const int64_t y = i * p.sh - p.ph + a * p.dh, xw = j * p.sw - p.pw + b * p.dw;
    cols[e] = (y >= 0 && y < g.h && xw >= 0 && xw < g.w) ? x[(plane * g.h + y) * g.w + xw] : T(0);
  }
}

// One thread per image element: each kernel offset (a, b) in the CPU's order adds the one column
// entry (if any) that it maps onto this element, on top of the element's current value.
template <typename T>
__global__ void col2im_kernel(T* x, const T* cols, int64_t n, ConvGeometry g, Pool2d p) {
  using M = opmath_t<T>;
  const int64_t width = g.oh * g.ow;
  TD_GRID_STRIDE(e, n) {
    const int64_t xw = e % g.w, y = (e / g.w) % g.h, plane = e / (g.w * g.h);
    M acc = static_cast<M>(x[e]);
    for (int64_t a = 0; a < p.kh; ++a) {
      const int64_t ry = y + p.ph - a * p.dh;  // i * sh for the output row i that reads y
      if (ry < 0 || ry % p.sh != 0 || ry / p.sh >= g.oh) continue;
      const int64_t i = ry / p.sh;
      for (int64_t b = 0; b < p.kw; ++b) {
        const int64_t rx = xw + p.pw - b * p.dw;
        if (rx < 0 || rx % p.sw != 0 || rx / p.sw >= g.ow) continue;
        acc += static_cast<M>(cols[((plane * p.kh + a) * p.kw + b) * width + i * g.ow + rx / p.sw]);
      }
    }
    x[e] = static_cast<T>(acc);
  }
}

Planes planes_of(const Tensor& in, const Tensor& out) {
  return Planes{in.sizes()[in.dim() - 2], in.sizes()[in.dim() - 1], out.sizes()[out.dim() - 2],
                out.sizes()[out.dim() - 1]};
}

}  // namespace

void max_pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2d& p) {
  const Planes g = planes_of(x, out);
  dispatch_numeric(x.dtype(), "max_pool2d", [&]<typename T>() {
    launch("max_pool2d", x.device(), out.numel(), max_pool2d_kernel<T>, static_cast<T*>(out.data_ptr()),
           indices.data_ptr<int64_t>(), static_cast<const T*>(x.data_ptr()), out.numel(), g, p);
  });
}

void avg_pool2d(const Tensor& out, const Tensor& x, const Pool2d& p, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
  const Planes g = planes_of(x, out);
  const AvgMode mode{count_include_pad, divisor_override.value_or(0)};
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<typename T>() {
    launch("avg_pool2d", x.device(), out.numel(), avg_pool2d_kernel<T>, static_cast<T*>(out.data_ptr()),
           static_cast<const T*>(x.data_ptr()), out.numel(), g, p, mode);
  });
}

void avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad, const Pool2d& p, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const Planes g = planes_of(grad_input, grad);
  const AvgMode mode{count_include_pad, divisor_override.value_or(0)};
  // Without outputs nothing covers the input: the caller's zeros stand.
  if (g.oh * g.ow == 0) return;
  dispatch_floating(grad.dtype(), "avg_pool2d_backward", [&]<typename T>() {
    launch("avg_pool2d_backward", grad.device(), grad_input.numel(), avg_pool2d_backward_kernel<T>,
           static_cast<T*>(grad_input.data_ptr()), static_cast<const T*>(grad.data_ptr()), grad_input.numel(), g, p,
           mode);
  });
}

void im2col(const Tensor& cols, const Tensor& x, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  dispatch_all(x.dtype(), "im2col", [&]<typename T>() {
    launch("im2col", x.device(), cols.numel(), im2col_kernel<T>, static_cast<T*>(cols.data_ptr()),
           static_cast<const T*>(x.data_ptr()), cols.numel(), g, p);
  });
}

void col2im(const Tensor& x, const Tensor& cols, const Pool2d& p) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  if (g.oh <= 0 || g.ow <= 0) return;  // no columns: x keeps its values
  dispatch_numeric(x.dtype(), "col2im", [&]<typename T>() {
    launch("col2im", x.device(), x.numel(), col2im_kernel<T>, static_cast<T*>(x.data_ptr()),
           static_cast<const T*>(cols.data_ptr()), x.numel(), g, p);
  });
}

}  // namespace tandem::kernels::cuda
