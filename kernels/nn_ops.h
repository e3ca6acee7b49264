// The tensor ops neural networks are built from: softmax and log_softmax, 2-D pooling, and
// im2col/col2im (PyTorch's F.unfold / F.fold), the core of convolution on the CPU.
// Pooling and im2col take [N, C, H, W] or [C, H, W]; sizes are one value or two (height, width).
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

// The gradient of avg_pool2d with respect to its input, of shape input_size.
Tensor avg_pool2d_backward(const Tensor& grad, IntList input_size, IntList kernel_size, IntList stride,
                           IntList padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override);

// [N, C, H, W] -> [N, C*kh*kw, L]: each column holds one receptive field (zeros in the padding).
Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
// The adjoint: [N, C*kh*kw, L] -> [N, C, H, W] with H, W = output_size, overlapping fields summed.
Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation = 1,
              IntList padding = 0, IntList stride = 1);

}  // namespace tandem::kernels
