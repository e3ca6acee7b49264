// Gradient clipping, as torch.nn.utils does it: by the total norm of all gradients together, or
// element by element.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace tandem::nn::utils {

// Scales every defined gradient of `parameters` in place by max_norm / (total + 1e-6) where that
// is below 1, total being the norm of order norm_type (any order but NaN, negative and -inf too, as
// linalg::vector_norm's) of all the gradients as one vector; returns total, from before the scaling, as a 0-dim tensor on the first
// gradient's device in the widest of their dtypes (0 where no parameter has a gradient).
// error_if_nonfinite: a total that is NaN or infinite is an error and no gradient changes (else
// they are scaled by NaN, as in PyTorch).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// The two halves of clip_grad_norm_, as torch.nn.utils' (to clip with a norm taken elsewhere,
// across processes, say): the norm of order norm_type of every defined tensor of `tensors` as
// one vector, a 0-dim tensor (0 where none is defined); and the scaling of every defined
// gradient of `parameters` by max_norm / (total_norm + 1e-6) where that is below 1.
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0, bool error_if_nonfinite = false);
void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm);

// Clamps every defined gradient of `parameters` in place to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

// Every parameter's elements in order as one 1-D tensor (differentiable), and back: vec's
// elements copied into the parameters in that order (without recording a gradient). The
// parameters must share a device; vec must hold exactly their elements.
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace tandem::nn::utils
