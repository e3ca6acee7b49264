// The tensor ops neural networks are built from: softmax and log_softmax, 2-D pooling, and
// im2col/col2im (PyTorch's F.unfold / F.fold), the core of convolution on the CPU.
// Pooling and im2col take [N, C, H, W] or [C, H, W]; sizes are one value or two (height, width).
// The fused layers (dropout, layer norm, cross-entropy with index targets) do in one or two passes
// what their op-by-op forms in nn::functional do in many; autograd/nn_ops.cc makes them differentiable.
#pragma once

#include <optional>
#include <tuple>

#include "core/tensor.h"

namespace tandem::kernels {

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// stride defaults to kernel_size. Output size: floor((in + 2p - d(k-1) - 1) / s) + 1, or ceil
// with ceil_mode (a last window may not start in the right padding).
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size, IntList stride = {},
                                                   IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  IntList dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

// The gradient of max_pool2d_with_indices with respect to its input, of shape input_size: each
// output's gradient added to the input element its index names within its plane (-1: none), in
// one pass. On the CPU (autograd takes scatter_add on a GPU).
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& indices, IntList input_size);

// The gradient of avg_pool2d with respect to its input, of shape input_size.
Tensor avg_pool2d_backward(const Tensor& grad, IntList input_size, IntList kernel_size, IntList stride,
                           IntList padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override);

// [N, C, H, W] -> [N, C*kh*kw, L]: each column holds one receptive field (zeros in the padding).
Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
// The adjoint: [N, C*kh*kw, L] -> [N, C, H, W] with H, W = output_size, overlapping fields summed.
Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation = 1,
              IntList padding = 0, IntList stride = 1);

// Convolution's matrix form of im2col: [N, C, H, W] -> [C*kh*kw, N*L], image n's columns at
// [n*L, (n+1)*L), so that one GEMM per group convolves the whole batch. col2im_matrix is its
// adjoint, back to [N, C, H, W] with H, W = output_size.
Tensor im2col_matrix(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride);
Tensor col2im_matrix(const Tensor& matrix, int64_t batch, IntList output_size, IntList kernel_size, IntList dilation,
                     IntList padding, IntList stride);

// 2-D convolution on the CPU (kernels/cpu/conv.cc), for float32 and float64: x [N, C, H, W],
// weight [O, C / groups, kh, kw] and bias [O] (or undefined) of one dtype. Returns the output
// [N, O, OH, OW] (laid out as [O, N, OH, OW]) and, with keep_columns, im2col_matrix(x), which the
// weight's gradient takes (built with the output, while each chunk of it is in cache).
std::tuple<Tensor, Tensor> conv2d_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride,
                                      IntList padding, IntList dilation, int64_t groups, bool keep_columns);
// The gradients of conv2d_cpu with respect to its input (of shape input_size) and, from the
// columns it kept, its weight (of shape weight_size).
Tensor conv2d_cpu_backward_input(const Tensor& grad, const Tensor& weight, IntList input_size, IntList stride,
                                 IntList padding, IntList dilation, int64_t groups);
Tensor conv2d_cpu_backward_weight(const Tensor& grad, const Tensor& columns, IntList weight_size, int64_t groups);

// (height, width) from one value (both) or two; throws tandem::Error naming op and the argument
// otherwise.
std::pair<int64_t, int64_t> height_width(IntList v, const char* op, const char* name);
// A pooling window's output positions along one dim, as PyTorch's pooling_output_shape: with
// ceil_mode a last partial window counts, unless it would start in the right padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode);

// The [N, O, OH, OW] output of a convolution of a 4-D input by a 4-D weight; throws
// tandem::Error naming conv2d where they do not fit (groups, a stride or dilation below 1,
// negative padding, a kernel larger than the padded input).
Shape conv2d_output_shape(const Shape& x, const Shape& weight, int64_t groups, IntList stride, IntList padding,
                          IntList dilation);

// 2-D convolution through cuDNN, for tensors on a CUDA device: x [N, C, H, W] and weight
// [O, C / groups, kh, kw] of one floating dtype; no bias (nn::functional::conv2d adds it). Used by
// conv2d while cudnn_enabled(): in a CUDA build, unless TANDEM_CUDNN=0 or set_cudnn_enabled(false)
// (then convolutions run as im2col and a GEMM, as on the CPU).
bool cudnn_enabled();
void set_cudnn_enabled(bool enabled);
// Whether cuDNN takes a convolution of these sizes: each tensor under 2^31 elements (its limit).
bool cudnn_conv_fits(const Shape& x, const Shape& weight, const Shape& out);
Tensor conv2d_cudnn(const Tensor& x, const Tensor& weight, IntList stride, IntList padding, IntList dilation,
                    int64_t groups);
// The gradients of conv2d_cudnn with respect to its input (of shape input_size) and its weight.
Tensor conv2d_cudnn_backward_input(const Tensor& grad, const Tensor& weight, IntList input_size, IntList stride,
                                   IntList padding, IntList dilation, int64_t groups);
Tensor conv2d_cudnn_backward_weight(const Tensor& grad, const Tensor& x, IntList weight_size, IntList stride,
                                    IntList padding, IntList dilation, int64_t groups);

// Dropout in training, 0 <= p < 1: {x * keep / (1 - p), keep}, keep (bool, x's shape) drawn from the
// generator of x's device exactly as bernoulli(x, 1 - p) draws it.
std::tuple<Tensor, Tensor> dropout(const Tensor& x, double p);
// grad * keep * scale, the gradient of dropout for scale = 1 / (1 - p); keep broadcasts to grad.
Tensor dropout_backward(const Tensor& grad, const Tensor& keep, double scale);

// Layer norm over the last `normalized_dims` dims of x (a floating tensor): {out, mean, rstd}, mean and
// rstd = 1 / sqrt(var + eps) of shape [rows] (x's leading dims flattened) in x's op-math dtype.
// weight and bias, each optional, have the normalized shape, x's dtype and device.
std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight,
                                              const Tensor& bias, double eps);
// {grad_x, grad_weight, grad_bias} from the forward's saved mean and rstd; grad_weight only with a
// weight, grad_bias only when with_bias.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                                       const Tensor& rstd, int64_t normalized_dims,
                                                       const Tensor& weight, bool with_bias);

// Cross-entropy of class scores x [rows, C] against int64 class indices target [rows] (a row whose
// target is ignore_index adds nothing), class weights [C] or undefined, label smoothing s in [0, 1]:
// {losses, target_weights, lse}, each [rows]: losses[r] = (1 - s) w[t] (lse - x[t]) + s / C * sum_c
// w[c] (lse - x[c]) and target_weights[r] = w[t] (1 without weights; both 0 for ignored rows) in x's
// dtype, lse (the log-sum-exp of the row) in op-math.
std::tuple<Tensor, Tensor, Tensor> cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight,
                                                 int64_t ignore_index, double smoothing);
// The gradient of sum_r row_scale[r] * losses[r] with respect to x ([rows, C], x's dtype).
Tensor cross_entropy_backward(const Tensor& row_scale, const Tensor& x, const Tensor& lse, const Tensor& target,
                              const Tensor& weight, int64_t ignore_index, double smoothing);

}  // namespace tandem::kernels
