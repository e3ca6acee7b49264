// Differentiable softmax, pooling and im2col/col2im.
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/factory.h"
#include "kernels/nn_ops.h"

namespace tandem {

using autograd::needs_grad;
using autograd::record;

Tensor softmax(const Tensor& x, int64_t dim) {
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

Tensor log_softmax(const Tensor& x, int64_t dim) {
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
  Tensor idx = indices;
  record("MaxPool2DWithIndicesBackward0", {&x}, {&y}, [shape, idx](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    // Each output's gradient goes to the input element it took (flat index within its plane);
    // a window wholly in the padding (index -1) passes nothing on.
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

}  // namespace tandem
