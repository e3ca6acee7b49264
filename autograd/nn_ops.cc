// Differentiable softmax, pooling, im2col/col2im and the fused layers.
#include <numeric>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "kernels/nn_ops.h"

namespace tandem {

using autograd::needs_grad;
using autograd::record;

// With a dtype, x is cast to it first (the cast recorded, so the gradient comes back in x's
// dtype), and autocast leaves the caller's choice alone, as PyTorch's.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (dtype) {
    kernels::check_defined(x, "softmax", "input");
    wrap_dim(dim, x.dim(), "softmax");  // before the copy
    amp::SuspendAutocast inside;
    return softmax(x.to(*dtype), dim);
  }
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return softmax(amp::to_float32(x), dim);
  }
  Tensor y = kernels::softmax(x, dim);
  if (!needs_grad({&x})) return y;
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "softmax");
  SavedTensor sy(y, true);
  record("SoftmaxBackward0", {&x}, {&y}, [sy, d](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor yv = sy.unpack("SoftmaxBackward0");
    if (yv.dim() == 0) return {zeros_like(yv)};
    return {yv * (g[0] - sum(g[0] * yv, {d}, true))};
  });
  return y;
}

Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (dtype) {
    kernels::check_defined(x, "log_softmax", "input");
    wrap_dim(dim, x.dim(), "log_softmax");  // before the copy
    amp::SuspendAutocast inside;
    return log_softmax(x.to(*dtype), dim);
  }
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return log_softmax(amp::to_float32(x), dim);
  }
  Tensor y = kernels::log_softmax(x, dim);
  if (!needs_grad({&x})) return y;
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "log_softmax");
  SavedTensor sy(y, true);
  record("LogSoftmaxBackward0", {&x}, {&y}, [sy, d](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor yv = sy.unpack("LogSoftmaxBackward0");
    if (yv.dim() == 0) return {zeros_like(yv)};
    return {g[0] - exp(yv) * sum(g[0], {d}, true)};
  });
  return y;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  auto [y, indices] = kernels::max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode);
  if (!needs_grad({&x})) return {y, indices};
  Shape shape = x.sizes();
  SavedTensor saved_indices(indices, false);  // returned to the user, who may write them
  record("MaxPool2DWithIndicesBackward0", {&x}, {&y}, [shape, saved_indices](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor idx = saved_indices.unpack("MaxPool2DWithIndicesBackward0");
    // Each output's gradient goes to the input element it took (flat index within its plane);
    // a window wholly in the padding (index -1) passes nothing on. One pass on the CPU; in ops
    // (scatter_add, differentiable) on a GPU and for create_graph.
    if (!is_grad_enabled() && g[0].device().is_cpu()) return {kernels::max_pool2d_backward(g[0], idx, shape)};
    const int64_t plane = shape[shape.size() - 2] * shape[shape.size() - 1];
    const int64_t planes = numel_of(shape) / std::max<int64_t>(plane, 1);
    Tensor flat_index = idx.reshape({planes, -1});
    Tensor flat_grad = g[0].reshape({planes, -1});
    Tensor valid = flat_index >= 0;
    Tensor grad = scatter_add(zeros({planes, plane}, g[0].options()), 1, where(valid, flat_index, 0),
                              where(valid, flat_grad, 0));
    return {grad.reshape(shape)};
  });
  return {y, indices};
}

Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

namespace {

// The gradient of avg_pool2d as an op of its own, so that it is differentiable too (its
// gradient is avg_pool2d again, with the same window).
struct AvgPool {
  Shape kernel, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

Tensor avg_pool_forward(const Tensor& x, const AvgPool& p);

Tensor avg_pool_backward(const Tensor& g, const Shape& input_size, const AvgPool& p) {
  Tensor grad = kernels::avg_pool2d_backward(g, input_size, p.kernel, p.stride, p.padding, p.ceil_mode,
                                             p.count_include_pad, p.divisor_override);
  if (needs_grad({&g})) {
    record("AvgPool2DBackwardBackward0", {&g}, {&grad}, [p](const std::vector<Tensor>& gg) -> std::vector<Tensor> {
      return {avg_pool_forward(gg[0], p)};
    });
  }
  return grad;
}

Tensor avg_pool_forward(const Tensor& x, const AvgPool& p) {
  Tensor y = kernels::avg_pool2d(x, p.kernel, p.stride, p.padding, p.ceil_mode, p.count_include_pad, p.divisor_override);
  if (!needs_grad({&x})) return y;
  Shape shape = x.sizes();
  record("AvgPool2DBackward0", {&x}, {&y}, [shape, p](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {avg_pool_backward(g[0], shape, p)};
  });
  return y;
}

}  // namespace

Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool_forward(x, AvgPool{kernel_size.vec(), stride.vec(), padding.vec(), ceil_mode, count_include_pad,
                                     divisor_override});
}

Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  Tensor y = kernels::im2col(x, kernel_size, dilation, padding, stride);
  if (!needs_grad({&x})) return y;
  Shape k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
  Shape hw(x.sizes().end() - 2, x.sizes().end());
  record("Im2ColBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {col2im(g[0], hw, k, d, p, s)};
  });
  return y;
}

Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation, IntList padding,
              IntList stride) {
  Tensor y = kernels::col2im(cols, output_size, kernel_size, dilation, padding, stride);
  if (!needs_grad({&cols})) return y;
  Shape k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
  record("Col2ImBackward0", {&cols}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {im2col(g[0], k, d, p, s)};
  });
  return y;
}

Tensor im2col_matrix(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  Tensor y = kernels::im2col_matrix(x, kernel_size, dilation, padding, stride);
  if (!needs_grad({&x})) return y;
  Shape k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
  const int64_t batch = x.size(0);
  Shape hw(x.sizes().end() - 2, x.sizes().end());
  record("Im2ColMatrixBackward", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {col2im_matrix(g[0], batch, hw, k, d, p, s)};
  });
  return y;
}

Tensor col2im_matrix(const Tensor& matrix, int64_t batch, IntList output_size, IntList kernel_size, IntList dilation,
                     IntList padding, IntList stride) {
  Tensor y = kernels::col2im_matrix(matrix, batch, output_size, kernel_size, dilation, padding, stride);
  if (!needs_grad({&matrix})) return y;
  Shape k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec();
  record("Col2ImMatrixBackward", {&matrix}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {im2col_matrix(g[0], k, d, p, s)};
  });
  return y;
}

namespace {

// Dropout's gradient, differentiable in grad (its own gradient is itself).
Tensor dropout_backward(const Tensor& grad, const Tensor& keep, double scale) {
  Tensor y = kernels::dropout_backward(grad, keep, scale);
  if (needs_grad({&grad})) {
    record("NativeDropoutBackwardBackward0", {&grad}, {&y},
           [keep, scale](const std::vector<Tensor>& g) -> std::vector<Tensor> {
             return {dropout_backward(g[0], keep, scale)};
           });
  }
  return y;
}

std::vector<int64_t> dims_range(int64_t begin, int64_t end) {
  std::vector<int64_t> dims(static_cast<size_t>(end - begin));
  std::iota(dims.begin(), dims.end(), begin);
  return dims;
}

// Layer norm's gradients in differentiable ops, for create_graph: the statistics are recomputed
// from x so that they carry their own dependence on it.
std::vector<Tensor> layer_norm_backward_ops(const Tensor& g, const Tensor& x, const Tensor& weight, bool with_bias,
                                            int64_t normalized_dims, double eps) {
  const std::vector<int64_t> normalized = dims_range(x.dim() - normalized_dims, x.dim());
  const std::vector<int64_t> leading = dims_range(0, x.dim() - normalized_dims);
  Tensor rstd = rsqrt(x.var(normalized, 0, true) + eps);
  Tensor xhat = (x - x.mean(normalized, true)) * rstd;
  Tensor gy = weight.defined() ? g * weight : g;
  Tensor grad_x = rstd * (gy - gy.mean(normalized, true) - xhat * (gy * xhat).mean(normalized, true));
  auto over_rows = [&](const Tensor& t) { return leading.empty() ? t : t.sum(leading); };
  return {grad_x, weight.defined() ? over_rows(g * xhat) : Tensor(), with_bias ? over_rows(g) : Tensor()};
}

// d(sum_r scale[r] * losses[r]) / dx in differentiable ops, for create_graph.
Tensor cross_entropy_backward_ops(const Tensor& scale, const Tensor& x, const Tensor& target, const Tensor& weight,
                                  int64_t ignore_index, double smoothing) {
  const int64_t classes = x.size(1);
  Tensor safe = where(target == ignore_index, 0, target);
  Tensor kept = (target != ignore_index).to(x.dtype()).unsqueeze(1);
  Tensor p = softmax(x, 1);
  Tensor target_weight = (weight.defined() ? weight.index_select(0, safe).unsqueeze(1) : ones_like(kept)) * kept;
  Tensor grad = (p - one_hot(safe, classes).to(x.dtype())) * target_weight * (1 - smoothing);
  if (smoothing > 0) {
    Tensor spread = weight.defined() ? p * weight.sum() - weight : p * static_cast<double>(classes) - 1;
    grad = grad + spread * kept * (smoothing / static_cast<double>(classes));
  }
  return grad * scale.unsqueeze(1);
}

struct ConvGeometry {
  Shape stride, padding, dilation;
  int64_t groups;
};

// A convolution's gradients in differentiable ops (im2col, matrix products, col2im), for
// create_graph: per group, grad_weight = g @ cols^T summed over the batch, grad_x = col2im(w^T @ g).
std::vector<Tensor> conv2d_backward_ops(const Tensor& g, const Tensor& x, const Tensor& w, const ConvGeometry& c) {
  const int64_t n = x.size(0), h = x.size(2), wd = x.size(3);
  const int64_t out_channels = w.size(0), kh = w.size(2), kw = w.size(3);
  const int64_t group_out = out_channels / c.groups, group_in = w.size(1) * kh * kw;
  Tensor cols = im2col(x, {kh, kw}, c.dilation, c.padding, c.stride);  // [N, C*kh*kw, L]
  Tensor g_cols = g.reshape({n, out_channels, g.size(2) * g.size(3)});  // [N, O, L]
  std::vector<Tensor> weight_parts, cols_parts;
  for (int64_t k = 0; k < c.groups; ++k) {
    Tensor gk = g_cols.narrow(1, k * group_out, group_out);
    Tensor wk = w.narrow(0, k * group_out, group_out).reshape({group_out, group_in});
    weight_parts.push_back(matmul(gk, cols.narrow(1, k * group_in, group_in).transpose(1, 2)).sum({0}));
    cols_parts.push_back(matmul(wk.t(), gk));
  }
  Tensor grad_w = (c.groups == 1 ? weight_parts[0] : cat(weight_parts, 0)).reshape(w.sizes());
  Tensor grad_cols = c.groups == 1 ? cols_parts[0] : cat(cols_parts, 1);
  return {col2im(grad_cols, {h, wd}, {kh, kw}, c.dilation, c.padding, c.stride), grad_w};
}

}  // namespace

Tensor cudnn_conv2d(const Tensor& x, const Tensor& weight, IntList stride, IntList padding, IntList dilation,
                    int64_t groups) {
  Tensor y = kernels::conv2d_cudnn(x, weight, stride, padding, dilation, groups);
  if (!needs_grad({&x, &weight})) return y;
  SavedTensor sx(x, false), sw(weight, false);
  const ConvGeometry c{stride.vec(), padding.vec(), dilation.vec(), groups};
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
  record("ConvolutionBackward0", {&x, &weight}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor xv = sx.unpack("ConvolutionBackward0"), wv = sw.unpack("ConvolutionBackward0");
    if (is_grad_enabled()) return conv2d_backward_ops(g[0], xv, wv, c);
    return {need_x ? kernels::conv2d_cudnn_backward_input(g[0], wv, xv.sizes(), c.stride, c.padding, c.dilation,
                                                           c.groups)
                   : Tensor(),
            need_w ? kernels::conv2d_cudnn_backward_weight(g[0], xv, wv.sizes(), c.stride, c.padding, c.dilation,
                                                            c.groups)
                   : Tensor()};
  });
  return y;
}

Tensor cpu_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                  IntList dilation, int64_t groups) {
  const bool record_grad = needs_grad({&x, &weight, &bias});
  const bool need_x = record_grad && x.requires_grad(), need_w = record_grad && weight.requires_grad();
  const bool need_b = record_grad && bias.defined() && bias.requires_grad();
  // The weight's gradient reads the receptive fields, kept from the forward pass.
  auto [y, columns] = kernels::conv2d_cpu(x, weight, bias, stride, padding, dilation, groups, need_w);
  if (!record_grad) return y;
  // x for create_graph's backward in ops (and its sizes); the kernels read the columns instead.
  SavedTensor sx(x, false), sw(weight, false);
  const ConvGeometry c{stride.vec(), padding.vec(), dilation.vec(), groups};
  record("ConvolutionBackward0", {&x, &weight, &bias}, {&y},
         [=, columns = columns](const std::vector<Tensor>& g) -> std::vector<Tensor> {
           Tensor xv = sx.unpack("ConvolutionBackward0"), wv = sw.unpack("ConvolutionBackward0");
           Tensor grad_b = need_b ? sum(g[0], {0, 2, 3}) : Tensor();
           if (is_grad_enabled()) {
             std::vector<Tensor> grads = conv2d_backward_ops(g[0], xv, wv, c);
             return {grads[0], grads[1], grad_b};
           }
           return {need_x ? kernels::conv2d_cpu_backward_input(g[0], wv, xv.sizes(), c.stride, c.padding, c.dilation,
                                                                c.groups)
                          : Tensor(),
                   need_w ? kernels::conv2d_cpu_backward_weight(g[0], columns, wv.sizes(), c.groups) : Tensor(),
                   grad_b};
         });
  return y;
}

Tensor fused_dropout(const Tensor& x, double p) {
  auto [y, keep] = kernels::dropout(x, p);
  if (!needs_grad({&x})) return y;
  const double scale = 1 / (1 - p);
  record("NativeDropoutBackward0", {&x}, {&y}, [keep, scale](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {dropout_backward(g[0], keep, scale)};
  });
  return y;
}

Tensor& fused_dropout_(Tensor& x, double p) {
  const bool recording = needs_grad({&x});
  autograd::check_inplace(x, "NativeDropoutBackward0", recording);
  auto [y, keep] = kernels::dropout(x, p);
  kernels::copy_(x, y);
  if (recording) {
    const double scale = 1 / (1 - p);
    autograd::record_inplace("NativeDropoutBackward0", x, {}, [keep, scale](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{dropout_backward(g[0], keep, scale)};
    });
  }
  return x;
}

Tensor fused_layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight, const Tensor& bias,
                        double eps) {
  auto [y, mean, rstd] = kernels::layer_norm(x, normalized_dims, weight, bias, eps);
  if (!needs_grad({&x, &weight, &bias})) return y;
  SavedTensor sx(x, false), sw(weight, false);
  const bool with_bias = bias.defined();
  record("NativeLayerNormBackward0", {&x, &weight, &bias}, {&y},
         [=, mean = mean, rstd = rstd](const std::vector<Tensor>& g) -> std::vector<Tensor> {
           Tensor xv = sx.unpack("NativeLayerNormBackward0");
           Tensor wv = sw.defined() ? sw.unpack("NativeLayerNormBackward0") : Tensor();
           if (is_grad_enabled()) return layer_norm_backward_ops(g[0], xv, wv, with_bias, normalized_dims, eps);
           auto [grad_x, grad_w, grad_b] = kernels::layer_norm_backward(g[0], xv, mean, rstd, normalized_dims, wv, with_bias);
           return {grad_x, grad_w, grad_b};
         });
  return y;
}

std::tuple<Tensor, Tensor> fused_cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight,
                                               int64_t ignore_index, double smoothing) {
  TD_CHECK(!weight.defined() || !weight.requires_grad(),
           "cross_entropy: the fused form gives class weights no gradient; this weight requires one");
  auto [losses, target_weights, lse] = kernels::cross_entropy(x, target, weight, ignore_index, smoothing);
  if (!needs_grad({&x})) return {losses, target_weights};
  // Targets and weights are saved with their versions: changed in place before backward, they
  // would give a wrong gradient (or, a target out of range, a read out of bounds).
  SavedTensor sx(x, false), st(target, false), sw(weight, false);
  record("CrossEntropyLossBackward0", {&x}, {&losses},
         [=, lse = lse](const std::vector<Tensor>& g) -> std::vector<Tensor> {
           const char* name = "CrossEntropyLossBackward0";
           Tensor xv = sx.unpack(name), tv = st.unpack(name), wv = sw.defined() ? sw.unpack(name) : Tensor();
           if (is_grad_enabled()) return {cross_entropy_backward_ops(g[0], xv, tv, wv, ignore_index, smoothing)};
           return {kernels::cross_entropy_backward(g[0], xv, lse, tv, wv, ignore_index, smoothing)};
         });
  return {losses, target_weights};
}

}  // namespace tandem
