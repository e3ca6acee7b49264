#include "kernels/nn_ops.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/index.h"
#include "kernels/linalg.h"
#include "kernels/reduce.h"
#include "kernels/views.h"
#include "core/generator.h"

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

Pool2d conv_params(IntList kernel, IntList dilation, IntList padding, IntList stride, const char* op) {
  auto [kh, kw] = height_width(kernel, op, "kernel_size");
  auto [dh, dw] = height_width(dilation, op, "dilation");
  auto [ph, pw] = height_width(padding, op, "padding");
  auto [sh, sw] = height_width(stride, op, "stride");
  TD_CHECK(kh > 0 && kw > 0, op, ": kernel_size must be positive, got ", shape_str(kernel.vec()));
  TD_CHECK(sh > 0 && sw > 0, op, ": stride must be positive, got ", shape_str(stride.vec()));
  TD_CHECK(dh > 0 && dw > 0, op, ": dilation must be positive, got ", shape_str(dilation.vec()));
  TD_CHECK(ph >= 0 && pw >= 0, op, ": padding must not be negative, got ", shape_str(padding.vec()));
  return Pool2d{kh, kw, sh, sw, ph, pw, dh, dw};
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
  // The window's arguments are checked as a convolution's (the stride defaults to the window).
  const Pool2d p = conv_params(kernel, dilation, padding, stride.empty() ? kernel : stride, op);
  const auto [kh, kw, sh, sw, ph, pw, dh, dw] = p;
  // PyTorch's bound: half of the window itself, also where dilation spreads it wider.
  TD_CHECK(ph <= kh / 2 && pw <= kw / 2, op, ": padding ", shape_str(padding.vec()),
           " must be non-negative and at most half of the kernel size ", shape_str(kernel.vec()));
  PoolShape s;
  s.p = p;
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

int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

std::pair<int64_t, int64_t> height_width(IntList v, const char* op, const char* name) {
  TD_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must be one value or two (height, width), got ",
           shape_str(v.vec()));
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

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

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& indices, IntList input_size) {
  check_defined(grad, "max_pool2d_backward", "grad");
  check_defined(indices, "max_pool2d_backward", "indices");
  const Shape input = input_size.vec();
  TD_CHECK(grad.device().is_cpu() && indices.device().is_cpu(), "max_pool2d_backward: runs on the CPU, got grad on ",
           grad.device(), " and indices on ", indices.device());
  TD_CHECK(indices.dtype() == kInt64, "max_pool2d_backward: indices must be int64, got ", indices.dtype());
  TD_CHECK(grad.sizes() == indices.sizes(), "max_pool2d_backward: grad has shape ", shape_str(grad.sizes()),
           " but indices ", shape_str(indices.sizes()));
  TD_CHECK((input.size() == 3 || input.size() == 4) && grad.dim() == static_cast<int64_t>(input.size()) &&
               std::equal(input.begin(), input.end() - 2, grad.sizes().begin()),
           "max_pool2d_backward: grad of shape ", shape_str(grad.sizes()), " does not pool an input of shape ",
           shape_str(input));
  Tensor grad_input = empty_tensor(input, grad.dtype(), grad.device());
  cpu::max_pool2d_backward(grad_input, contiguous(grad), contiguous(indices));
  return grad_input;
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

// x4's receptive fields for window p, checked to exist (`shown`: the input as the caller gave
// it, for the error): as a fresh [N, C*kh*kw, L] tensor or, with batch_beside, as the
// [C*kh*kw, N*L] matrix that holds image n's columns at [n*L, (n+1)*L).
Tensor unfold(const Tensor& x4, const Tensor& shown, const Pool2d& p, bool batch_beside, const char* op) {
  const int64_t n = x4.sizes()[0], c = x4.sizes()[1], h = x4.sizes()[2], w = x4.sizes()[3];
  const int64_t oh = conv_out_size(h, p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(w, p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(oh > 0 && ow > 0, op, ": the kernel does not fit the padded input (input ", shape_str(shown.sizes()),
           ", kernel ", p.kh, "x", p.kw, ")");
  const int64_t fields = c * p.kh * p.kw, width = oh * ow;
  Tensor xc = contiguous(x4);
  if (!batch_beside || x4.is_cuda()) {
    Tensor cols = empty_tensor({n, fields, width}, x4.dtype(), x4.device());
    x4.is_cuda() ? cuda::im2col(cols, xc, p) : cpu::im2col(cols, xc, p);
    if (!batch_beside) return cols;
    // The GPU's kernel writes packed columns only: one copy lays them out as the matrix.
    return contiguous(transpose(cols, 0, 1)).view({fields, n * width});
  }
  Tensor matrix = empty_tensor({fields, n * width}, x4.dtype(), x4.device());
  cpu::im2col(as_strided(matrix, {n, fields, width}, {width, n * width, 1}, 0), xc, p);  // [N, fields, L] over it
  return matrix;
}

// The adjoint: columns [N, C*kh*kw, L] (any strides) summed into a fresh [N, C, h, w].
Tensor fold(const Tensor& cols, int64_t h, int64_t w, const Pool2d& p) {
  Tensor out = zeros({cols.sizes()[0], cols.sizes()[1] / (p.kh * p.kw), h, w},
                     TensorOptions(cols.dtype()).device(cols.device()));
  // The GPU's kernel reads packed columns only; the CPU's, rows that run along memory.
  if (cols.is_cuda()) {
    cuda::col2im(out, contiguous(cols), p);
  } else {
    cpu::col2im(out, cols.strides()[2] == 1 ? cols : contiguous(cols), p);
  }
  return out;
}

}  // namespace

Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  check_defined(x, "unfold (im2col)", "input");
  TD_CHECK(x.dim() == 3 || x.dim() == 4,
           "unfold (im2col): expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ", shape_str(x.sizes()));
  Pool2d p = conv_params(kernel_size, dilation, padding, stride, "unfold (im2col)");
  Tensor cols = unfold(x.dim() == 3 ? unsqueeze(x, 0) : x, x, p, false, "unfold (im2col)");
  return x.dim() == 3 ? squeeze(cols, 0) : cols;
}

Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation, IntList padding,
              IntList stride) {
  check_defined(cols, "fold (col2im)", "input");
  TD_CHECK(cols.dim() == 2 || cols.dim() == 3, "fold (col2im): expected a 2-D or 3-D input, got shape ",
           shape_str(cols.sizes()));
  Pool2d p = conv_params(kernel_size, dilation, padding, stride, "fold (col2im)");
  auto [h, w] = height_width(output_size, "fold (col2im)", "output_size");
  Tensor c3 = cols.dim() == 2 ? unsqueeze(cols, 0) : cols;
  const int64_t fields = p.kh * p.kw;
  TD_CHECK(c3.sizes()[1] % fields == 0, "fold (col2im): dim 1 of the input (", c3.sizes()[1],
           ") must be divisible by the kernel's ", p.kh, "x", p.kw, " = ", fields);
  const int64_t oh = conv_out_size(h, p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(w, p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(c3.sizes()[2] == oh * ow, "fold (col2im): the input has ", c3.sizes()[2], " columns but output_size ", h,
           "x", w, " with this kernel, padding and stride gives ", oh, "x", ow, " = ", oh * ow);
  Tensor out = fold(c3, h, w, p);
  return cols.dim() == 2 ? squeeze(out, 0) : out;
}

Tensor im2col_matrix(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  check_defined(x, "im2col_matrix", "input");
  TD_CHECK(x.dim() == 4, "im2col_matrix: expected a 4-D [N, C, H, W] input, got shape ", shape_str(x.sizes()));
  return unfold(x, x, conv_params(kernel_size, dilation, padding, stride, "im2col_matrix"), true, "im2col_matrix");
}

Tensor col2im_matrix(const Tensor& matrix, int64_t batch, IntList output_size, IntList kernel_size, IntList dilation,
                     IntList padding, IntList stride) {
  check_defined(matrix, "col2im_matrix", "input");
  Pool2d p = conv_params(kernel_size, dilation, padding, stride, "col2im_matrix");
  auto [h, w] = height_width(output_size, "col2im_matrix", "output_size");
  const int64_t oh = conv_out_size(h, p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(w, p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(oh > 0 && ow > 0, "col2im_matrix: the kernel does not fit the padded output_size ", h, "x", w,
           " (kernel ", p.kh, "x", p.kw, ")");
  TD_CHECK(matrix.dim() == 2 && batch >= 0 && matrix.sizes()[1] == batch * oh * ow &&
               matrix.sizes()[0] % (p.kh * p.kw) == 0,
           "col2im_matrix: expected [C*", p.kh, "*", p.kw, ", ", batch, "*", oh * ow, "] (", batch,
           " images' columns side by side, ", oh, "x", ow, " positions each for output_size ", h, "x", w,
           "), got shape ", shape_str(matrix.sizes()));
  // [N, fields, L] over the matrix's memory.
  return fold(transpose(view(matrix, {matrix.sizes()[0], batch, oh * ow}), 0, 1), h, w, p);
}

namespace {

// -1: not yet read from TANDEM_CUDNN; then 0 or 1.
std::atomic<int> cudnn_switch{-1};

struct ConvShape {
  Pool2d p;
  Shape out;
};

// Checks a fused convolution's operand shapes (of x, weight, or a gradient of the output's shape)
// and works out its geometry.
ConvShape conv_shape(const Shape& x, const Shape& w, int64_t groups, IntList stride, IntList padding,
                     IntList dilation, const char* op) {
  TD_CHECK(x.size() == 4 && w.size() == 4, op, ": expected a 4-D input and weight, got ", shape_str(x), " and ",
           shape_str(w));
  TD_CHECK(groups >= 1 && x[1] == w[1] * groups && w[0] % groups == 0, op, ": input ", shape_str(x), " and weight ",
           shape_str(w), " do not fit groups=", groups);
  Pool2d p = conv_params({w[2], w[3]}, dilation, padding, stride, op);
  const int64_t oh = conv_out_size(x[2], p.kh, p.ph, p.sh, p.dh), ow = conv_out_size(x[3], p.kw, p.pw, p.sw, p.dw);
  TD_CHECK(oh > 0 && ow > 0, op, ": the kernel does not fit the padded input (input ", shape_str(x), ", weight ",
           shape_str(w), ")");
  return {p, Shape{x[0], w[0], oh, ow}};
}

// conv_shape for cuDNN, whose descriptors take int sizes: a tensor of 2^31 elements or more is
// not supported.
ConvShape cudnn_conv_shape(const Shape& x, const Shape& w, int64_t groups, IntList stride, IntList padding,
                           IntList dilation, const char* op) {
  ConvShape s = conv_shape(x, w, groups, stride, padding, dilation, op);
  TD_CHECK(cudnn_conv_fits(x, w, s.out), op, ": input ", shape_str(x), ", weight ", shape_str(w), " or output ",
           shape_str(s.out), " has 2^31 elements or more, beyond cuDNN");
  return s;
}

// A gradient [N, O, OH, OW] as the matrix [O, N*OH*OW] (a view where its layout allows).
Tensor gradient_matrix(const Tensor& grad) {
  const Shape& s = grad.sizes();
  return view(contiguous(transpose(grad, 0, 1)), {s[1], s[0] * s[2] * s[3]});
}

// Which fused convolution takes a set of operands: the CPU's (float32, float64) or cuDNN's (any
// floating dtype, on a CUDA device).
enum class ConvBackend { kCpu, kCudnn };

// The operands are defined, on one device of the backend's kind, and of one dtype it takes.
void check_conv_operands(const char* op, ConvBackend backend, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) check_defined(*t, op, "operand");
  const Device device = common_device(op, operands);
  const bool cudnn = backend == ConvBackend::kCudnn;
  const char* where = cudnn ? "cuDNN convolutions take tensors on a CUDA device"
                            : "the CPU convolution takes tensors on the CPU";
  TD_CHECK(cudnn ? device.is_cuda() : device.is_cpu(), op, ": ", where, ", got ", device);
  const DType dtype = (*operands.begin())->dtype();
  const bool taken = cudnn ? is_floating(dtype) : dtype == kFloat32 || dtype == kFloat64;
  for (const Tensor* t : operands) {
    TD_CHECK(t->dtype() == dtype && taken, op, ": expected ", cudnn ? "floating" : "float32 or float64",
             " operands of one dtype, got ", dtype, " and ", t->dtype());
  }
}

// The gradient of one convolution operand (of size result_size) from the output's grad and the
// other operand, through a cuDNN backward pass; zeros where either is empty.
template <typename Pass>
Tensor conv2d_cudnn_gradient(const char* op, const ConvShape& s, const Tensor& grad, const Tensor& other,
                             IntList result_size, Pass pass) {
  TD_CHECK(grad.sizes() == s.out, op, ": grad has shape ", shape_str(grad.sizes()), ", the output's is ",
           shape_str(s.out));
  Tensor result = empty_tensor(result_size, grad.dtype(), grad.device());
  if (grad.numel() == 0 || other.numel() == 0) {
    fill_into(result, 0);
  } else if (result.numel() > 0) {
    pass(result, contiguous(grad), contiguous(other));
  }
  return result;
}

}  // namespace

bool cudnn_enabled() {
  int state = cudnn_switch.load();
  if (state < 0) {
    const char* env = std::getenv("TANDEM_CUDNN");
    const std::string value = env ? env : "";
    state = value == "0" || value == "false" || value == "off" ? 0 : 1;
    cudnn_switch.store(state);
  }
  return state == 1 && cuda::cudnn_available();
}

void set_cudnn_enabled(bool enabled) { cudnn_switch.store(enabled ? 1 : 0); }

Shape conv2d_output_shape(const Shape& x, const Shape& weight, int64_t groups, IntList stride, IntList padding,
                          IntList dilation) {
  return conv_shape(x, weight, groups, stride, padding, dilation, "conv2d").out;
}

bool cudnn_conv_fits(const Shape& x, const Shape& weight, const Shape& out) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  return numel_of(x) < limit && numel_of(weight) < limit && numel_of(out) < limit;
}

Tensor conv2d_cudnn(const Tensor& x, const Tensor& weight, IntList stride, IntList padding, IntList dilation,
                    int64_t groups) {
  check_conv_operands("conv2d", ConvBackend::kCudnn, {&x, &weight});
  const ConvShape s = cudnn_conv_shape(x.sizes(), weight.sizes(), groups, stride, padding, dilation, "conv2d");
  Tensor out = empty_tensor(s.out, x.dtype(), x.device());
  if (x.numel() == 0 || weight.numel() == 0) {  // nothing to sum (cuDNN refuses empty dims)
    fill_into(out, 0);
  } else if (out.numel() > 0) {
    cuda::conv2d(out, contiguous(x), contiguous(weight), s.p, groups);
  }
  return out;
}

Tensor conv2d_cudnn_backward_input(const Tensor& grad, const Tensor& weight, IntList input_size, IntList stride,
                                   IntList padding, IntList dilation, int64_t groups) {
  const char* op = "conv2d_backward_input";
  check_conv_operands(op, ConvBackend::kCudnn, {&grad, &weight});
  const ConvShape s = cudnn_conv_shape(input_size.vec(), weight.sizes(), groups, stride, padding, dilation, op);
  return conv2d_cudnn_gradient(op, s, grad, weight, input_size, [&](const Tensor& grad_x, const Tensor& g, const Tensor& w) {
    cuda::conv2d_backward_input(grad_x, g, w, s.p, groups);
  });
}

Tensor conv2d_cudnn_backward_weight(const Tensor& grad, const Tensor& x, IntList weight_size, IntList stride,
                                    IntList padding, IntList dilation, int64_t groups) {
  const char* op = "conv2d_backward_weight";
  check_conv_operands(op, ConvBackend::kCudnn, {&grad, &x});
  const ConvShape s = cudnn_conv_shape(x.sizes(), weight_size.vec(), groups, stride, padding, dilation, op);
  return conv2d_cudnn_gradient(op, s, grad, x, weight_size, [&](const Tensor& grad_w, const Tensor& g, const Tensor& xc) {
    cuda::conv2d_backward_weight(grad_w, g, xc, s.p, groups);
  });
}

std::tuple<Tensor, Tensor> conv2d_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                                      IntList padding, IntList dilation, int64_t groups, bool keep_columns) {
  check_conv_operands("conv2d", ConvBackend::kCpu, {&x, &weight});
  const ConvShape s = conv_shape(x.sizes(), weight.sizes(), groups, stride, padding, dilation, "conv2d");
  if (bias.defined()) {
    check_conv_operands("conv2d", ConvBackend::kCpu, {&x, &bias});
    TD_CHECK(bias.sizes() == Shape{s.out[1]}, "conv2d: bias must have shape [", s.out[1], "], got ",
             shape_str(bias.sizes()));
  }
  const int64_t batch = s.out[0], out_channels = s.out[1], width = batch * s.out[2] * s.out[3];
  const int64_t fields = x.sizes()[1] * s.p.kh * s.p.kw;
  Tensor out = empty_tensor({out_channels, width}, x.dtype(), x.device());
  Tensor columns = keep_columns ? empty_tensor({fields, width}, x.dtype(), x.device()) : Tensor();
  if (out.numel() > 0 && fields > 0) {
    cpu::conv2d(out, columns, contiguous(x), contiguous(weight), bias.defined() ? contiguous(bias) : Tensor(), s.p,
                groups);
  } else {  // nothing to sum, or no output: the bias alone (no output channel's gradient reads the columns)
    if (bias.defined()) {
      copy_into(out, expand(unsqueeze(bias, 1), out.sizes()));
    } else {
      fill_into(out, 0);
    }
    if (keep_columns) fill_into(columns, 0);
  }
  return {transpose(view(out, {out_channels, batch, s.out[2], s.out[3]}), 0, 1), columns};
}

Tensor conv2d_cpu_backward_input(const Tensor& grad, const Tensor& weight, IntList input_size, IntList stride,
                                 IntList padding, IntList dilation, int64_t groups) {
  const char* op = "conv2d_backward_input";
  check_conv_operands(op, ConvBackend::kCpu, {&grad, &weight});
  const ConvShape s = conv_shape(input_size.vec(), weight.sizes(), groups, stride, padding, dilation, op);
  TD_CHECK(grad.sizes() == s.out, op, ": grad has shape ", shape_str(grad.sizes()), ", the output's is ",
           shape_str(s.out));
  Tensor grad_x = zeros(input_size, grad.options());
  if (grad.numel() > 0 && weight.numel() > 0 && grad_x.numel() > 0) {
    const Tensor g = gradient_matrix(grad);
    cpu::conv2d_backward_input(grad_x, g, g.strides()[0], contiguous(weight), s.p, groups);
  }
  return grad_x;
}

Tensor conv2d_cpu_backward_weight(const Tensor& grad, const Tensor& columns, IntList weight_size, int64_t groups) {
  const char* op = "conv2d_backward_weight";
  check_conv_operands(op, ConvBackend::kCpu, {&grad, &columns});
  const Shape w = weight_size.vec();
  TD_CHECK(w.size() == 4 && grad.dim() == 4 && groups >= 1 && w[0] % groups == 0 && grad.sizes()[1] == w[0] &&
               columns.dim() == 2 && columns.sizes()[0] == w[1] * groups * w[2] * w[3] &&
               columns.sizes()[1] == grad.sizes()[0] * grad.sizes()[2] * grad.sizes()[3],
           op, ": grad ", shape_str(grad.sizes()), " and columns ", shape_str(columns.sizes()),
           " do not fit a weight of shape ", shape_str(w), " with groups=", groups);
  const Tensor g = gradient_matrix(grad);
  const int64_t group_out = w[0] / groups, group_fields = w[1] * w[2] * w[3];
  std::vector<Tensor> parts;
  for (int64_t group = 0; group < groups; ++group) {
    parts.push_back(mm(narrow(g, 0, group * group_out, group_out),
                       transpose(narrow(columns, 0, group * group_fields, group_fields), 0, 1)));
  }
  return reshape(groups == 1 ? parts[0] : cat(parts, 0), w);
}

std::tuple<Tensor, Tensor> dropout(const Tensor& x, double p) {
  check_defined(x, "dropout", "input");
  TD_CHECK(is_floating(x.dtype()), "dropout: expected a floating tensor, got dtype ", x.dtype());
  TD_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor keep = empty_tensor(x.sizes(), kBool, x.device());
  Tensor xc = contiguous(x);
  const PhiloxState state = default_generator(x.device()).reserve(static_cast<uint64_t>(x.numel()));
  x.is_cuda() ? cuda::dropout(out, keep, xc, 1 - p, 1 / (1 - p), state)
              : cpu::dropout(out, keep, xc, 1 - p, 1 / (1 - p), state);
  return {out, keep};
}

Tensor dropout_backward(const Tensor& grad, const Tensor& keep, double scale) {
  check_defined(grad, "dropout_backward", "grad");
  check_defined(keep, "dropout_backward", "keep");
  common_device("dropout_backward", {&grad, &keep});
  TD_CHECK(is_floating(grad.dtype()) && keep.dtype() == kBool,
           "dropout_backward: expected a floating grad and a bool mask, got ", grad.dtype(), " and ", keep.dtype());
  TD_CHECK(broadcast_shapes(grad.sizes(), keep.sizes(), "dropout_backward") == grad.sizes(), "dropout_backward: mask of shape ",
           shape_str(keep.sizes()), " does not broadcast to grad ", shape_str(grad.sizes()));
  Tensor out = empty_tensor(grad.sizes(), grad.dtype(), grad.device());
  grad.is_cuda() ? cuda::keep_scale(out, grad, keep, scale) : cpu::keep_scale(out, grad, keep, scale);
  return out;
}

namespace {

DType opmath_dtype(DType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// A per-row or per-column parameter: undefined, or `shape`, x's dtype and device, made contiguous.
Tensor row_parameter(const Tensor& p, const Tensor& x, const Shape& shape, const char* op, const char* name) {
  if (!p.defined()) return p;
  TD_CHECK(p.sizes() == shape && p.dtype() == x.dtype() && p.device() == x.device(), op, ": ", name,
           " must have shape ", shape_str(shape), ", dtype ", x.dtype(), " and device ", x.device(), ", got ",
           shape_str(p.sizes()), ", ", p.dtype(), " on ", p.device());
  return contiguous(p);
}

struct RowShape {
  int64_t rows, cols;
  Shape normalized;
};

RowShape layer_norm_rows(const Tensor& x, int64_t normalized_dims, const char* op) {
  check_defined(x, op, "input");
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating tensor, got dtype ", x.dtype());
  TD_CHECK(normalized_dims >= 1 && normalized_dims <= x.dim(), op, ": cannot normalize the last ", normalized_dims,
           " dims of a tensor of shape ", shape_str(x.sizes()));
  Shape normalized(x.sizes().end() - normalized_dims, x.sizes().end());
  const int64_t cols = numel_of(normalized);
  TD_CHECK(cols > 0, op, ": the normalized shape ", shape_str(normalized), " has no elements");
  return {x.numel() / cols, cols, normalized};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight,
                                              const Tensor& bias, double eps) {
  const RowShape s = layer_norm_rows(x, normalized_dims, "layer_norm");
  Tensor w = row_parameter(weight, x, s.normalized, "layer_norm", "weight");
  Tensor b = row_parameter(bias, x, s.normalized, "layer_norm", "bias");
  Tensor out = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor mean = empty_tensor({s.rows}, opmath_dtype(x.dtype()), x.device());
  Tensor rstd = empty_tensor({s.rows}, opmath_dtype(x.dtype()), x.device());
  Tensor xc = contiguous(x);
  x.is_cuda() ? cuda::layer_norm(out, mean, rstd, xc, w, b, eps) : cpu::layer_norm(out, mean, rstd, xc, w, b, eps);
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                                       const Tensor& rstd, int64_t normalized_dims,
                                                       const Tensor& weight, bool with_bias) {
  check_defined(grad, "layer_norm_backward", "grad");
  check_defined(mean, "layer_norm_backward", "mean");
  check_defined(rstd, "layer_norm_backward", "rstd");
  const RowShape s = layer_norm_rows(x, normalized_dims, "layer_norm_backward");
  common_device("layer_norm_backward", {&grad, &x, &mean, &rstd});
  TD_CHECK(grad.sizes() == x.sizes() && grad.dtype() == x.dtype(), "layer_norm_backward: grad ",
           shape_str(grad.sizes()), " ", grad.dtype(), " does not match the input ", shape_str(x.sizes()), " ", x.dtype());
  const DType stats = opmath_dtype(x.dtype());
  TD_CHECK(mean.sizes() == Shape{s.rows} && rstd.sizes() == Shape{s.rows} && mean.dtype() == stats &&
               rstd.dtype() == stats,
           "layer_norm_backward: mean and rstd must be ", stats, " [", s.rows, "], got ", shape_str(mean.sizes()), " ",
           mean.dtype(), " and ", shape_str(rstd.sizes()), " ", rstd.dtype());
  Tensor w = row_parameter(weight, x, s.normalized, "layer_norm_backward", "weight");
  Tensor grad_x = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor grad_w = w.defined() ? empty_tensor(s.normalized, x.dtype(), x.device()) : Tensor();
  Tensor grad_b = with_bias ? empty_tensor(s.normalized, x.dtype(), x.device()) : Tensor();
  Tensor gc = contiguous(grad), xc = contiguous(x), mc = contiguous(mean), rc = contiguous(rstd);
  x.is_cuda() ? cuda::layer_norm_backward(grad_x, grad_w, grad_b, gc, xc, mc, rc, w)
              : cpu::layer_norm_backward(grad_x, grad_w, grad_b, gc, xc, mc, rc, w);
  return {grad_x, grad_w, grad_b};
}

namespace {

struct CrossEntropyArgs {
  Tensor x, target, weight, weight_sum;
  int64_t rows, classes;
};

CrossEntropyArgs cross_entropy_args(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                    double smoothing, const char* op, bool check_targets) {
  check_defined(x, op, "input");
  check_defined(target, op, "target");
  common_device(op, {&x, &target});
  TD_CHECK(is_floating(x.dtype()) && x.dim() == 2, op, ": expected floating class scores [rows, C], got ",
           shape_str(x.sizes()), " ", x.dtype());
  const int64_t rows = x.sizes()[0], classes = x.sizes()[1];
  TD_CHECK(classes > 0, op, ": class scores ", shape_str(x.sizes()), " have no classes");
  TD_CHECK(target.dtype() == kInt64 && target.sizes() == Shape{rows}, op, ": input of shape ", shape_str(x.sizes()),
           " needs an int64 target of shape [", rows, "], got ", shape_str(target.sizes()), " ", target.dtype());
  TD_CHECK(smoothing >= 0 && smoothing <= 1, op, ": label_smoothing must be in [0, 1], got ", smoothing);
  Tensor w = row_parameter(weight, x, {classes}, op, "weight");
  Tensor t = contiguous(target);
  if (check_targets && rows > 0) {  // the backward takes the forward's targets, already checked
    // Both bounds come to the host in one copy: on a GPU, one wait for the device.
    Tensor kept = where(eq(t, ignore_index), 0, t);
    Tensor bounds = to(stack({amin(kept), amax(kept)}), Device(kCPU));
    const int64_t lo = bounds.data_ptr<int64_t>()[0], hi = bounds.data_ptr<int64_t>()[1];
    TD_CHECK(lo >= 0 && hi < classes, op, ": target ", lo < 0 ? lo : hi, " is out of bounds for ", classes,
             " classes");
  }
  const DType acc = opmath_dtype(x.dtype());
  Tensor weight_sum = w.defined() ? sum(w, acc) : full({}, static_cast<double>(classes), TensorOptions(acc).device(x.device()));
  return {contiguous(x), t, w, weight_sum, rows, classes};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight,
                                                 int64_t ignore_index, double smoothing) {
  CrossEntropyArgs a = cross_entropy_args(x, target, weight, ignore_index, smoothing, "cross_entropy", true);
  Tensor losses = empty_tensor({a.rows}, x.dtype(), x.device());
  Tensor target_weights = empty_tensor({a.rows}, x.dtype(), x.device());
  Tensor lse = empty_tensor({a.rows}, opmath_dtype(x.dtype()), x.device());
  x.is_cuda() ? cuda::cross_entropy(losses, target_weights, lse, a.x, a.target, a.weight, a.weight_sum, ignore_index,
                                    smoothing)
              : cpu::cross_entropy(losses, target_weights, lse, a.x, a.target, a.weight, a.weight_sum, ignore_index,
                                   smoothing);
  return {losses, target_weights, lse};
}

Tensor cross_entropy_backward(const Tensor& row_scale, const Tensor& x, const Tensor& lse, const Tensor& target,
                              const Tensor& weight, int64_t ignore_index, double smoothing) {
  CrossEntropyArgs a = cross_entropy_args(x, target, weight, ignore_index, smoothing, "cross_entropy_backward", false);
  check_defined(row_scale, "cross_entropy_backward", "row_scale");
  check_defined(lse, "cross_entropy_backward", "lse");
  common_device("cross_entropy_backward", {&x, &row_scale, &lse});
  const DType acc = opmath_dtype(x.dtype());
  TD_CHECK(row_scale.sizes() == Shape{a.rows} && lse.sizes() == Shape{a.rows} && lse.dtype() == acc,
           "cross_entropy_backward: row_scale and lse must be [", a.rows, "] (lse ", acc, "), got ",
           shape_str(row_scale.sizes()), " and ", shape_str(lse.sizes()), " ", lse.dtype());
  Tensor scale = contiguous(to(row_scale, acc));
  Tensor grad_x = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor lc = contiguous(lse);
  x.is_cuda() ? cuda::cross_entropy_backward(grad_x, scale, a.x, lc, a.target, a.weight, a.weight_sum, ignore_index,
                                             smoothing)
              : cpu::cross_entropy_backward(grad_x, scale, a.x, lc, a.target, a.weight, a.weight_sum, ignore_index,
                                            smoothing);
  return grad_x;
}

}  // namespace tandem::kernels
