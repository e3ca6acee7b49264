// Fused optimizer steps: SGD (momentum, dampening, Nesterov, weight decay) and Adam/AdamW
// (amsgrad) over many tensors at once, each element read and written once, with the arithmetic
// of the op-by-op steps in nn/optim (kernels/functors.h: SgdUpdate, AdamUpdate), so with their
// results to the bit. On a GPU the tensors of one call go in as few launches as the kernel's
// tensor list allows, where the op-by-op form launches several kernels per tensor; on the CPU
// they are one range for the thread pool. nn/optim's SGD, Adam and AdamW use them wherever a
// group's parameters allow (nn/optim/fused.h).
#pragma once

#include <vector>

#include "core/tensor.h"
#include "kernels/functors.h"

namespace tandem::kernels {

struct SgdStep {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;  // ascend: the gradient's negative is used
};

// For each i: params[i] moves against grads[i] (updated in place, not counted as an in-place
// write of grads). With momentum, bufs[i] is the momentum buffer, started at the gradient where
// first[i] (bufs and first are ignored without momentum). All of one device and one floating
// dtype (float32 or float64), each params[i], grads[i], bufs[i] contiguous and of one shape.
void sgd_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
               const std::vector<bool>& first, const SgdStep& step);

struct AdamStep {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool decoupled_weight_decay = false, amsgrad = false;
  bool maximize = false;  // ascend: the gradient's negative is used
};

// One Adam step for each i, whose state has seen steps[i] steps (this one included).
// max_exp_avg_sqs is used (and must be given) with amsgrad only.
void adam_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamStep& step);

namespace detail {
// The per-element update of one tensor, its scalars in op-math M rounded as nn/optim rounds them.
template <typename M>
fn::SgdUpdate<M> sgd_update(const SgdStep& step, bool first);
template <typename M>
fn::AdamUpdate<M> adam_update(const AdamStep& step, int64_t step_count);
}  // namespace detail

}  // namespace tandem::kernels
