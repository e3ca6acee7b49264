#include "kernels/nn_ops.h"

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/factory.h"

namespace tandem::kernels {

namespace {

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_defined(x, op, "input");
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating tensor, got dtype ", x.dtype());
  int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor xc = contiguous(x);
  const int64_t along = x.dim() == 0 ? 0 : d;
  x.is_cuda() ? cuda::softmax(out, xc, along, log) : cpu::softmax(out, xc, along, log);
  return out;
}

// (height, width) from one or two values.
std::pair<int64_t, int64_t> pair_of(IntList v, const char* op, const char* name) {
  TD_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must be one value or two (height, width), got ",
           shape_str(v.vec()));
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

struct PoolShape {
  Pool2d p;
  int64_t planes, h, w, oh, ow;
  Shape out_shape;
};

PoolShape pool_shape(const Tensor& x, IntList kernel, IntList stride, IntList padding, IntList dilation,
                     bool ceil_mode, const char* op) {
  check_defined(x, op, "input");
  TD_CHECK(x.dim() == 3 || x.dim() == 4, op, ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
           shape_str(x.sizes()));
  auto [kh, kw] = pair_of(kernel, op, "kernel_size");
  auto [sh, sw] = stride.empty() ? std::pair{kh, kw} : pair_of(stride, op, "stride");
  auto [ph, pw] = pair_of(padding, op, "padding");
  auto [dh, dw] = pair_of(dilation, op, "dilation");
  TD_CHECK(kh > 0 && kw > 0, op, ": kernel_size must be positive, got ", shape_str(kernel.vec()));
  TD_CHECK(sh > 0 && sw > 0, op, ": stride must be positive, got ", shape_str(stride.vec()));
  TD_CHECK(dh > 0 && dw > 0, op, ": dilation must be positive, got ", shape_str(dilation.vec()));
  TD_CHECK(ph >= 0 && pw >= 0 && ph <= ((kh - 1) * dh + 1) / 2 && pw <= ((kw - 1) * dw + 1) / 2, op,
           ": padding ", shape_str(padding.vec()), " must be non-negative and at most half of the effective kernel size");
  PoolShape s;
  s.p = Pool2d{kh, kw, sh, sw, ph, pw, dh, dw};
  s.h = x.sizes()[x.dim() - 2];
  s.w = x.sizes()[x.dim() - 1];
  s.planes = numel_of(Shape(x.sizes().begin(), x.sizes().end() - 2));
  s.oh = pooled_size(s.h, kh, ph, sh, dh, ceil_mode);
  s.ow = pooled_size(s.w, kw, pw, sw, dw, ceil_mode);
  TD_CHECK(s.oh >= 1 && s.ow >= 1, op, ": input of shape ", shape_str(x.sizes()), " gives an output of size ", s.oh,
           "x", s.ow, ", which is too small");
  s.out_shape = Shape(x.sizes().begin(), x.sizes().end() - 2);
  s.out_shape.push_back(s.oh);
  s.out_shape.push_back(s.ow);
  return s;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  PoolShape s = pool_shape(x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
  TD_CHECK(x.dtype() != kBool, "max_pool2d: bool tensors are not supported");
  Tensor out = empty_tensor(s.out_shape, x.dtype(), x.device());
  Tensor indices = empty_tensor(s.out_shape, kInt64, x.device());
  Tensor xc = contiguous(x);
  x.is_cuda() ? cuda::max_pool2d(out, indices, xc, s.p) : cpu::max_pool2d(out, indices, xc, s.p);
  return {out, indices};
}

Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  PoolShape s = pool_shape(x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d");
  TD_CHECK(is_floating(x.dtype()), "avg_pool2d: expected a floating tensor, got dtype ", x.dtype());
  TD_CHECK(!divisor_override || *divisor_override != 0, "avg_pool2d: divisor_override must not be zero");
  Tensor out = empty_tensor(s.out_shape, x.dtype(), x.device());
  Tensor xc = contiguous(x);
  x.is_cuda() ? cuda::avg_pool2d(out, xc, s.p, count_include_pad, divisor_override)
              : cpu::avg_pool2d(out, xc, s.p, count_include_pad, divisor_override);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad, IntList input_size, IntList kernel_size, IntList stride,
                           IntList padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  check_defined(grad, "avg_pool2d_backward", "grad");
  Tensor grad_input = zeros(input_size, TensorOptions(grad.dtype()).device(grad.device()));
  PoolShape s = pool_shape(grad_input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d_backward");
  TD_CHECK(grad.sizes() == s.out_shape, "avg_pool2d_backward: grad has shape ", shape_str(grad.sizes()),
           " but the pooling of ", shape_str(input_size.vec()), " gives ", shape_str(s.out_shape));
  Tensor gc = contiguous(grad);
  grad.is_cuda() ? cuda::avg_pool2d_backward(grad_input, gc, s.p, count_include_pad, divisor_override)
                 : cpu::avg_pool2d_backward(grad_input, gc, s.p, count_include_pad, divisor_override);
  return grad_input;
}

namespace {

Pool2d conv_params(IntList kernel, IntList dilation, IntList padding, IntList stride, const char* op) {
  auto [kh, kw] = pair_of(kernel, op, "kernel_size");
  auto [dh, dw] = pair_of(dilation, op, "dilation");
  auto [ph, pw] = pair_of(padding, op, "padding");
  auto [sh, sw] = pair_of(stride, op, "stride");
  TD_CHECK(kh > 0 && kw > 0 && dh > 0 && dw > 0 && sh > 0 && sw > 0, op,
           ": kernel_size, dilation and stride must be positive");
  TD_CHECK(ph >= 0 && pw >= 0, op, ": padding must be non-negative, got ", shape_str(padding.vec()));
  return Pool2d{kh, kw, sh, sw, ph, pw, dh, dw};
}


}  // namespace

Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  check_defined(x, "im2col", "input");
  TD_CHECK(x.dim() == 3 || x.dim() == 4, "im2col: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
           shape_str(x.sizes()));
  Pool2d p = conv_params(kernel_size, dilation, padding, stride, "im2col");
  Tensor x4 = x.dim() == 3 ? unsqueeze(x, 0) : x;
  const int64_t n = x4.sizes()[0], c = x4.sizes()[1], h = x4.sizes()[2], w = x4.sizes()[3];
  const int64_t oh = conv_out_size(h, p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(w, p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(oh > 0 && ow > 0, "im2col: the kernel does not fit the padded input (input ", shape_str(x.sizes()),
           ", kernel ", p.kh, "x", p.kw, ")");
  Tensor cols = empty_tensor({n, c * p.kh * p.kw, oh * ow}, x.dtype(), x.device());
  Tensor xc = contiguous(x4);
  x.is_cuda() ? cuda::im2col(cols, xc, p) : cpu::im2col(cols, xc, p);
  return x.dim() == 3 ? squeeze(cols, 0) : cols;
}

Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation, IntList padding,
              IntList stride) {
  check_defined(cols, "col2im", "input");
  TD_CHECK(cols.dim() == 2 || cols.dim() == 3, "col2im: expected a 2-D or 3-D input, got shape ",
           shape_str(cols.sizes()));
  Pool2d p = conv_params(kernel_size, dilation, padding, stride, "col2im");
  auto [h, w] = pair_of(output_size, "col2im", "output_size");
  Tensor c3 = cols.dim() == 2 ? unsqueeze(cols, 0) : cols;
  const int64_t fields = p.kh * p.kw;
  TD_CHECK(c3.sizes()[1] % fields == 0, "col2im: dim 1 of the input (", c3.sizes()[1],
           ") must be divisible by the kernel's ", p.kh, "x", p.kw, " = ", fields);
  const int64_t oh = conv_out_size(h, p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(w, p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(c3.sizes()[2] == oh * ow, "col2im: the input has ", c3.sizes()[2], " columns but output_size ", h, "x", w,
           " with this kernel, padding and stride gives ", oh, "x", ow, " = ", oh * ow);
  Tensor out = zeros({c3.sizes()[0], c3.sizes()[1] / fields, h, w}, TensorOptions(cols.dtype()).device(cols.device()));
  Tensor cc = contiguous(c3);
  cols.is_cuda() ? cuda::col2im(out, cc, p) : cpu::col2im(out, cc, p);
  return cols.dim() == 2 ? squeeze(out, 0) : out;
}

}  // namespace tandem::kernels
