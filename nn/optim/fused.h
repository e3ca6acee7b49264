// Which parameters of a group an optimizer updates with one fused step (kernels/optim.h): all of
// them that have gradients, when they are float32 or float64 tensors on one device, contiguous,
// with gradients like themselves. The fused step rounds each value as the op-by-op step does, so
// the choice changes the speed, never the result. The options' fused(): unset, the fused step
// wherever a group allows it; true, required (an error names what stands in the way); false, the
// op-by-op step always.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::optim::detail {

// Why `p` cannot join a fused step whose first parameter is `first` (undefined: p is the first);
// empty when it can.
inline std::string unfusable_reason(const Tensor& p, const Tensor& first) {
  using tandem::detail::str_cat;
  const Tensor g = p.grad();
  if (p.dtype() != kFloat32 && p.dtype() != kFloat64) return str_cat("it is ", p.dtype(), ", not float32 or float64");
  if (!p.is_contiguous()) return "it is not contiguous";
  if (!g.is_contiguous()) return "its gradient is not contiguous";
  if (g.dtype() != p.dtype() || g.device() != p.device() || g.sizes() != p.sizes()) {
    return str_cat("its gradient is ", g.dtype(), shape_str(g.sizes()), " on ", g.device());
  }
  if (first.defined() && (p.device() != first.device() || p.dtype() != first.dtype())) {
    return str_cat("it is ", p.dtype(), " on ", p.device(), " where the first is ", first.dtype(), " on ",
                   first.device());
  }
  return "";
}

// The parameters with gradients that the fused step takes, or none for the op-by-op step.
inline std::vector<Tensor> fused_params(const std::vector<Tensor>& params, std::optional<bool> fused,
                                        const char* optimizer) {
  std::vector<Tensor> out;
  if (fused == false) return out;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.grad().defined()) continue;
    const std::string reason = unfusable_reason(p, out.empty() ? Tensor() : out[0]);
    if (reason.empty()) {
      out.push_back(p);
      continue;
    }
    TD_CHECK(fused != true, optimizer, ": fused=true needs float32 or float64 parameters on one device, "
             "contiguous, with gradients like themselves; parameter ", i, " of its group cannot join: ", reason);
    return {};
  }
  return out;
}

}  // namespace tandem::optim::detail
