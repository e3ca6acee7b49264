// Which parameters of a group an optimizer updates with one fused step (kernels/optim.h): all of
// them that have gradients, when they are float32 or float64 tensors on one CUDA device with
// contiguous gradients like themselves. Anything else (the CPU, mixed devices or dtypes) takes the
// op-by-op step, which on the CPU reproduces PyTorch's arithmetic to the last bit.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace tandem::optim::detail {

inline std::vector<Tensor> fusable(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool ok = p.is_cuda() && (p.dtype() == kFloat32 || p.dtype() == kFloat64) && p.is_contiguous() &&
                    g.is_contiguous() && g.dtype() == p.dtype() && g.device() == p.device() && g.sizes() == p.sizes() &&
                    (out.empty() || (p.device() == out[0].device() && p.dtype() == out[0].dtype()));
    if (!ok) return {};
    out.push_back(p);
  }
  return out;
}

}  // namespace tandem::optim::detail
