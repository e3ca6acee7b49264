#include "nn/optim/sgd.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"
#include "kernels/optim.h"
#include "nn/optim/fused.h"

namespace tandem::optim {

SGDOptions::SGDOptions(double lr) : lr_(lr) {}

void SGDOptions::validate() const {
  // !(x >= 0) also rejects NaN, which would otherwise poison every parameter silently.
  TD_CHECK(std::isfinite(momentum_) && momentum_ >= 0, "SGD: invalid momentum = ", momentum_, " (must be >= 0)");
  TD_CHECK(std::isfinite(dampening_), "SGD: invalid dampening = ", dampening_);
  TD_CHECK(std::isfinite(weight_decay_) && weight_decay_ >= 0, "SGD: invalid weight_decay = ", weight_decay_,
           " (must be >= 0)");
  TD_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), "SGD: nesterov momentum requires momentum > 0 and "
           "dampening = 0 (got momentum = ", momentum_, ", dampening = ", dampening_, ")");
}

void SGDOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["momentum"] = momentum_;
  out["dampening"] = dampening_;
  out["weight_decay"] = weight_decay_;
  out["nesterov"] = nesterov_;
  out["maximize"] = maximize_;
  out["fused"] = fused_ ? nlohmann::json(*fused_) : nlohmann::json(nullptr);
}

void SGDOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "SGD", "lr");
  momentum_ = detail::json_double(in, "SGD", "momentum");
  dampening_ = detail::json_double(in, "SGD", "dampening");
  weight_decay_ = detail::json_double(in, "SGD", "weight_decay");
  nesterov_ = detail::json_bool(in, "SGD", "nesterov");
  maximize_ = detail::json_bool_or_false(in, "SGD", "maximize");
  fused_ = detail::json_optional_bool(in, "SGD", "fused");
}

std::unique_ptr<OptimizerParamState> SGDParamState::clone() const {
  auto out = std::make_unique<SGDParamState>();
  if (momentum_buffer.defined()) out->momentum_buffer = momentum_buffer.clone();
  return out;
}

void SGDParamState::save(StateDict& out, const std::string& prefix) const {
  if (momentum_buffer.defined()) out.insert(prefix + "momentum_buffer", momentum_buffer.clone());
}

size_t SGDParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  if (!in.contains(prefix + "momentum_buffer")) return 0;
  momentum_buffer = detail::load_like_param(in, prefix + "momentum_buffer", param);
  return 1;
}

void SGDParamState::follow(const Tensor& param) { detail::follow_param(momentum_buffer, param); }

SGD::SGD(std::vector<Tensor> params, const SGDOptions& defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> SGD::make_param_state() const { return std::make_unique<SGDParamState>(); }

// torch/optim/sgd.py, _single_tensor_sgd, op by op; or one fused step per group.
void SGD::update() {
  // Every group's choice is made before any group changes, so that fused=true refused changes nothing.
  std::vector<std::vector<Tensor>> fused;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const SGDOptions&>(group.options());
    fused.push_back(detail::fused_params(group.params(), o.fused(), "SGD"));
  }
  for (size_t group_index = 0; group_index < fused.size(); ++group_index) {
    auto& group = param_groups()[group_index];
    const auto& o = static_cast<const SGDOptions&>(group.options());
    if (const std::vector<Tensor>& params = fused[group_index]; !params.empty()) {
      std::vector<Tensor> grads, bufs;
      std::vector<bool> first;
      for (const Tensor& p : params) {
        grads.push_back(p.grad());
        if (o.momentum() == 0) continue;
        const SGDParamState* s = static_cast<const SGDParamState*>(state_of(p));
        first.push_back(!s || !s->momentum_buffer.defined());
        bufs.push_back(first.back() ? empty_like(p) : s->momentum_buffer);
      }
      kernels::sgd_step_(params, grads, bufs, first,
                         kernels::SgdStep{o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(),
                                         o.maximize()});
      // New buffers join the state once the step has filled them.
      for (size_t i = 0; i < bufs.size(); ++i) {
        if (!first[i]) continue;
        auto& slot = state_slot(params[i]);
        if (!slot) slot = std::make_unique<SGDParamState>();
        static_cast<SGDParamState&>(*slot).momentum_buffer = bufs[i];
      }
      continue;
    }
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      if (o.momentum() != 0) {
        auto& slot = state_slot(p);
        if (!slot) slot = std::make_unique<SGDParamState>();
        Tensor& buf = static_cast<SGDParamState&>(*slot).momentum_buffer;
        if (!buf.defined()) {
          // The first step starts the buffer at the gradient itself: no dampening on it.
          buf = grad.detach().clone();
        } else {
          buf.mul_(o.momentum()).add_(grad, 1 - o.dampening());
        }
        grad = o.nesterov() ? grad.add(buf, o.momentum()) : buf;
      }
      p.add_(grad, -o.lr());
    }
  }
}

}  // namespace tandem::optim
