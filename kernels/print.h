// Printing a tensor as PyTorch prints it (the Tensor's str() and operator<< use this).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::kernels {

// tensor([...], <device>, <dtype>, <extra suffixes>): the autograd layer adds grad_fn=... or
// requires_grad=True as extra suffixes.
std::string format(const Tensor& t, const std::vector<std::string>& extra_suffixes = {});

}  // namespace tandem::kernels
