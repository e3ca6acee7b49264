#include "nn/optim/rmsprop.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

using detail::check_non_negative;

// ---- RMSprop ----

RMSpropOptions::RMSpropOptions(double lr) : lr_(lr) {}

void RMSpropOptions::validate() const {
  check_non_negative("RMSprop", "alpha", alpha_);
  check_non_negative("RMSprop", "eps", eps_);
  check_non_negative("RMSprop", "weight_decay", weight_decay_);
  check_non_negative("RMSprop", "momentum", momentum_);
}

void RMSpropOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["alpha"] = alpha_;
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["momentum"] = momentum_;
  out["centered"] = centered_;
  out["maximize"] = maximize_;
}

void RMSpropOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "RMSprop", "lr");
  alpha_ = detail::json_double(in, "RMSprop", "alpha");
  eps_ = detail::json_double(in, "RMSprop", "eps");
  weight_decay_ = detail::json_double(in, "RMSprop", "weight_decay");
  momentum_ = detail::json_double(in, "RMSprop", "momentum");
  centered_ = detail::json_bool(in, "RMSprop", "centered");
  maximize_ = detail::json_bool_or_false(in, "RMSprop", "maximize");
}

std::unique_ptr<OptimizerParamState> RMSpropParamState::clone() const {
  auto out = std::make_unique<RMSpropParamState>();
  out->step = step;
  for (auto [from, to] : {std::pair{&square_avg, &out->square_avg}, std::pair{&momentum_buffer, &out->momentum_buffer},
                          std::pair{&grad_avg, &out->grad_avg}}) {
    if (from->defined()) *to = from->clone();
  }
  return out;
}

void RMSpropParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "square_avg", square_avg.clone());
  if (momentum_buffer.defined()) out.insert(prefix + "momentum_buffer", momentum_buffer.clone());
  if (grad_avg.defined()) out.insert(prefix + "grad_avg", grad_avg.clone());
}

size_t RMSpropParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  square_avg = detail::load_like_param(in, prefix + "square_avg", param);
  size_t read = 2;
  for (auto [name, slot] : {std::pair{"momentum_buffer", &momentum_buffer}, std::pair{"grad_avg", &grad_avg}}) {
    if (!in.contains(prefix + name)) continue;
    *slot = detail::load_like_param(in, prefix + name, param);
    ++read;
  }
  return read;
}

void RMSpropParamState::follow(const Tensor& param) {
  detail::follow_param(square_avg, param);
  detail::follow_param(momentum_buffer, param);
  detail::follow_param(grad_avg, param);
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

RMSprop::RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> RMSprop::make_param_state() const {
  return std::make_unique<RMSpropParamState>();
}

// torch/optim/rmsprop.py, _single_tensor_rmsprop, with capturable and differentiable off. The
// momentum buffer and the mean gradient start at zeros when momentum or centered is first on.
void RMSprop::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const RMSpropOptions&>(group.options());
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<RMSpropParamState>();
        fresh->square_avg = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<RMSpropParamState&>(*slot);
      s.step += 1;
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      s.square_avg.mul_(o.alpha());
      detail::addcmul_(s.square_avg, grad, grad, 1 - o.alpha());
      Tensor avg;
      if (o.centered()) {
        if (!s.grad_avg.defined()) s.grad_avg = zeros_like(p);
        detail::lerp_(s.grad_avg, grad, 1 - o.alpha());
        avg = s.square_avg.clone();
        detail::addcmul_(avg, s.grad_avg, s.grad_avg, -1);
        avg.sqrt_();
      } else {
        avg = s.square_avg.sqrt();
      }
      avg.add_(o.eps());
      if (o.momentum() > 0) {
        if (!s.momentum_buffer.defined()) s.momentum_buffer = zeros_like(p);
        s.momentum_buffer.mul_(o.momentum());
        detail::addcdiv_(s.momentum_buffer, grad, avg, 1);
        p.add_(s.momentum_buffer, -o.lr());
      } else {
        detail::addcdiv_(p, grad, avg, -o.lr());
      }
    }
  }
}

// ---- Adagrad ----

AdagradOptions::AdagradOptions(double lr) : lr_(lr) {}

void AdagradOptions::validate() const {
  check_non_negative("Adagrad", "lr_decay", lr_decay_);
  check_non_negative("Adagrad", "weight_decay", weight_decay_);
  check_non_negative("Adagrad", "initial_accumulator_value", initial_accumulator_value_);
  check_non_negative("Adagrad", "eps", eps_);
}

void AdagradOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["lr_decay"] = lr_decay_;
  out["weight_decay"] = weight_decay_;
  out["initial_accumulator_value"] = initial_accumulator_value_;
  out["eps"] = eps_;
  out["maximize"] = maximize_;
}

void AdagradOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Adagrad", "lr");
  lr_decay_ = detail::json_double(in, "Adagrad", "lr_decay");
  weight_decay_ = detail::json_double(in, "Adagrad", "weight_decay");
  initial_accumulator_value_ = detail::json_double(in, "Adagrad", "initial_accumulator_value");
  eps_ = detail::json_double(in, "Adagrad", "eps");
  maximize_ = detail::json_bool_or_false(in, "Adagrad", "maximize");
}

std::unique_ptr<OptimizerParamState> AdagradParamState::clone() const {
  auto out = std::make_unique<AdagradParamState>();
  out->step = step;
  if (sum.defined()) out->sum = sum.clone();
  return out;
}

void AdagradParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "sum", sum.clone());
}

size_t AdagradParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  sum = detail::load_like_param(in, prefix + "sum", param);
  return 2;
}

void AdagradParamState::follow(const Tensor& param) { detail::follow_param(sum, param); }

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults)
    : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adagrad::Adagrad(std::vector<OptimizerParamGroup> param_groups, const AdagradOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> Adagrad::make_param_state() const {
  return std::make_unique<AdagradParamState>();
}

// torch/optim/adagrad.py, _single_tensor_adagrad, for dense gradients. PyTorch fills each
// parameter's sum when the optimizer is made, from the constructor's initial_accumulator_value
// (a group's own is not read); here it is filled at the parameter's first step, from the same.
void Adagrad::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdagradOptions&>(group.options());
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<AdagradParamState>();
        fresh->sum = full_like(p, static_cast<const AdagradOptions&>(defaults()).initial_accumulator_value());
        slot = std::move(fresh);
      }
      auto& s = static_cast<AdagradParamState&>(*slot);
      s.step += 1;
      if (o.maximize()) grad = grad.neg();
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      const double clr = o.lr() / (1 + (static_cast<double>(s.step) - 1) * o.lr_decay());
      detail::addcmul_(s.sum, grad, grad, 1);
      Tensor std_dev = s.sum.sqrt().add_(o.eps());
      detail::addcdiv_(p, grad, std_dev, -clr);
    }
  }
}

}  // namespace tandem::optim
