// The scalars of the fused optimizer steps (kernels/optim.h), computed as nn/optim computes them
// for the op-by-op steps: in double, one rounding per operation (this file is compiled without
// fused multiply-adds, as nn/optim is), then rounded once to the op-math type.
#include <cmath>

#include "kernels/optim.h"

namespace tandem::kernels {

namespace detail {

template <typename M>
fn::SgdUpdate<M> sgd_update(const SgdStep& s, bool first) {
  return fn::SgdUpdate<M>{static_cast<M>(s.lr), static_cast<M>(s.momentum), static_cast<M>(1 - s.dampening),
                          static_cast<M>(s.weight_decay), s.weight_decay != 0, s.momentum != 0, s.nesterov, first,
                          s.maximize};
}

template <typename M>
fn::AdamUpdate<M> adam_update(const AdamStep& s, int64_t step_count) {
  // The arithmetic of nn/optim/adam.cc: lerp's weight 1 - beta1 in double, rounded to M, and
  // 1 - weight from the rounded weight (exact), as PyTorch's lerp takes it.
  const double weight = static_cast<double>(static_cast<M>(1 - s.beta1));
  const bool from_start = std::abs(weight) < 0.5;
  const double step = static_cast<double>(step_count);
  const double bias_correction1 = 1 - std::pow(s.beta1, step);
  const double bias_correction2 = 1 - std::pow(s.beta2, step);
  return fn::AdamUpdate<M>{static_cast<M>(1 - s.lr * s.weight_decay),
                           static_cast<M>(s.weight_decay),
                           static_cast<M>(from_start ? weight : -(1 - weight)),
                           from_start,
                           static_cast<M>(s.beta2),
                           static_cast<M>(1 - s.beta2),
                           static_cast<M>(s.lr / bias_correction1),
                           static_cast<M>(std::pow(bias_correction2, 0.5)),
                           static_cast<M>(s.eps),
                           s.weight_decay != 0,
                           s.decoupled_weight_decay,
                           s.amsgrad,
                           s.maximize};
}

template fn::SgdUpdate<float> sgd_update<float>(const SgdStep&, bool);
template fn::SgdUpdate<double> sgd_update<double>(const SgdStep&, bool);
template fn::AdamUpdate<float> adam_update<float>(const AdamStep&, int64_t);
template fn::AdamUpdate<double> adam_update<double>(const AdamStep&, int64_t);

}  // namespace detail

}  // namespace tandem::kernels
