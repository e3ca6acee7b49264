#include "nn/optim/classic.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

using detail::check_non_negative;

// ---- Adadelta ----

AdadeltaOptions::AdadeltaOptions(double lr) : lr_(lr) {}

void AdadeltaOptions::validate() const {
  TD_CHECK(rho_ >= 0 && rho_ <= 1, "Adadelta: invalid rho = ", rho_, " (must be in [0, 1])");
  check_non_negative("Adadelta", "eps", eps_);
  check_non_negative("Adadelta", "weight_decay", weight_decay_);
}

void AdadeltaOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["rho"] = rho_;
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["maximize"] = maximize_;
}

void AdadeltaOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Adadelta", "lr");
  rho_ = detail::json_double(in, "Adadelta", "rho");
  eps_ = detail::json_double(in, "Adadelta", "eps");
  weight_decay_ = detail::json_double(in, "Adadelta", "weight_decay");
  maximize_ = detail::json_bool(in, "Adadelta", "maximize");
}

std::unique_ptr<OptimizerParamState> AdadeltaParamState::clone() const {
  auto out = std::make_unique<AdadeltaParamState>();
  out->step = step;
  out->square_avg = detail::clone_if_defined(square_avg);
  out->acc_delta = detail::clone_if_defined(acc_delta);
  return out;
}

void AdadeltaParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "square_avg", square_avg.clone());
  out.insert(prefix + "acc_delta", acc_delta.clone());
}

size_t AdadeltaParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  square_avg = detail::load_like_param(in, prefix + "square_avg", param);
  acc_delta = detail::load_like_param(in, prefix + "acc_delta", param);
  return 3;
}

void AdadeltaParamState::follow(const Tensor& param) {
  detail::follow_param(square_avg, param);
  detail::follow_param(acc_delta, param);
}

Adadelta::Adadelta(std::vector<Tensor> params, const AdadeltaOptions& defaults)
    : Adadelta(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adadelta::Adadelta(std::vector<OptimizerParamGroup> param_groups, const AdadeltaOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> Adadelta::make_param_state() const {
  return std::make_unique<AdadeltaParamState>();
}

// torch/optim/adadelta.py, _single_tensor_adadelta, with capturable and differentiable off.
void Adadelta::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdadeltaOptions&>(group.options());
    const double rho = o.rho();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<AdadeltaParamState>();
        fresh->square_avg = zeros_like(p);
        fresh->acc_delta = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<AdadeltaParamState&>(*slot);
      s.step += 1;
      if (o.maximize()) grad = grad.neg();
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      s.square_avg.mul_(rho);
      detail::addcmul_(s.square_avg, grad, grad, 1 - rho);
      const Tensor std_dev = s.square_avg.add(o.eps()).sqrt_();
      Tensor delta = s.acc_delta.add(o.eps()).sqrt_();
      delta.div_(std_dev).mul_(grad);
      s.acc_delta.mul_(rho);
      detail::addcmul_(s.acc_delta, delta, delta, 1 - rho);
      p.add_(delta, -o.lr());
    }
  }
}

// ---- Rprop ----

RpropOptions::RpropOptions(double lr) : lr_(lr) {}

void RpropOptions::validate() const {
  const auto [etaminus, etaplus] = etas_;
  TD_CHECK(etaminus > 0 && etaminus < 1 && etaplus > 1 && std::isfinite(etaplus), "Rprop: invalid etas (", etaminus,
           ", ", etaplus, "): they must be 0 < etaminus < 1 < etaplus");
  // step_sizes are not checked, as PyTorch does not.
}

void RpropOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["etas"] = {std::get<0>(etas_), std::get<1>(etas_)};
  out["step_sizes"] = {std::get<0>(step_sizes_), std::get<1>(step_sizes_)};
  out["maximize"] = maximize_;
}

void RpropOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Rprop", "lr");
  etas_ = detail::json_pair(in, "Rprop", "etas");
  step_sizes_ = detail::json_pair(in, "Rprop", "step_sizes");
  maximize_ = detail::json_bool(in, "Rprop", "maximize");
}

std::unique_ptr<OptimizerParamState> RpropParamState::clone() const {
  auto out = std::make_unique<RpropParamState>();
  out->step = step;
  out->prev = detail::clone_if_defined(prev);
  out->step_size = detail::clone_if_defined(step_size);
  return out;
}

void RpropParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "prev", prev.clone());
  out.insert(prefix + "step_size", step_size.clone());
}

size_t RpropParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  prev = detail::load_like_param(in, prefix + "prev", param);
  step_size = detail::load_like_param(in, prefix + "step_size", param);
  return 3;
}

void RpropParamState::follow(const Tensor& param) {
  detail::follow_param(prev, param);
  detail::follow_param(step_size, param);
}

Rprop::Rprop(std::vector<Tensor> params, const RpropOptions& defaults)
    : Rprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Rprop::Rprop(std::vector<OptimizerParamGroup> param_groups, const RpropOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> Rprop::make_param_state() const { return std::make_unique<RpropParamState>(); }

// torch/optim/rprop.py, _single_tensor_rprop, with capturable and differentiable off. Where the
// gradient's sign flipped (the factor is etaminus) the element does not move and the next step
// sees no previous gradient; a NaN product keeps its NaN factor, as PyTorch's masked writes do.
void Rprop::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const RpropOptions&>(group.options());
    const auto [etaminus, etaplus] = o.etas();
    const auto [smallest, largest] = o.step_sizes();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<RpropParamState>();
        fresh->prev = zeros_like(p);
        fresh->step_size = full_like(grad, o.lr());
        slot = std::move(fresh);
      }
      auto& s = static_cast<RpropParamState&>(*slot);
      s.step += 1;
      const Tensor agreement = grad.mul(s.prev).sign();
      const Tensor flipped = agreement < 0;
      const Tensor factor =
          where(agreement > 0, etaplus, where(flipped, etaminus, where(agreement == 0, 1.0, agreement)));
      s.step_size.mul_(factor).clamp_(smallest, largest);
      grad = where(flipped, zeros_like(grad), grad);
      detail::addcmul_(p, grad.sign(), s.step_size, -1);
      s.prev.copy_(grad);
    }
  }
}

// ---- ASGD ----

ASGDOptions::ASGDOptions(double lr) : lr_(lr) {}

void ASGDOptions::validate() const {
  check_non_negative("ASGD", "lambd", lambd_);
  check_non_negative("ASGD", "alpha", alpha_);
  TD_CHECK(!std::isnan(t0_), "ASGD: invalid t0 = ", t0_);
  check_non_negative("ASGD", "weight_decay", weight_decay_);
}

void ASGDOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["lambd"] = lambd_;
  out["alpha"] = alpha_;
  out["t0"] = t0_;
  out["weight_decay"] = weight_decay_;
  out["maximize"] = maximize_;
}

void ASGDOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "ASGD", "lr");
  lambd_ = detail::json_double(in, "ASGD", "lambd");
  alpha_ = detail::json_double(in, "ASGD", "alpha");
  t0_ = detail::json_double(in, "ASGD", "t0");
  weight_decay_ = detail::json_double(in, "ASGD", "weight_decay");
  maximize_ = detail::json_bool(in, "ASGD", "maximize");
}

std::unique_ptr<OptimizerParamState> ASGDParamState::clone() const {
  auto out = std::make_unique<ASGDParamState>();
  out->step = step;
  out->eta = eta;
  out->mu = mu;
  out->ax = detail::clone_if_defined(ax);
  return out;
}

void ASGDParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "eta", tensor(eta));
  out.insert(prefix + "mu", tensor(mu));
  out.insert(prefix + "ax", ax.clone());
}

size_t ASGDParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  eta = detail::load_float32(in, prefix + "eta");
  mu = detail::load_float32(in, prefix + "mu");
  ax = detail::load_like_param(in, prefix + "ax", param);
  return 4;
}

void ASGDParamState::follow(const Tensor& param) { detail::follow_param(ax, param); }

ASGD::ASGD(std::vector<Tensor> params, const ASGDOptions& defaults)
    : ASGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

ASGD::ASGD(std::vector<OptimizerParamGroup> param_groups, const ASGDOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> ASGD::make_param_state() const { return std::make_unique<ASGDParamState>(); }

Tensor ASGD::averaged(const Tensor& param) const {
  const auto* s = static_cast<const ASGDParamState*>(state_of(param));
  return s ? s->ax : Tensor();
}

// torch/optim/asgd.py, _single_tensor_asgd, with capturable off. eta starts at the group's lr
// rounded to float32, and each new eta and mu is rounded to float32 as PyTorch stores them.
void ASGD::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const ASGDOptions&>(group.options());
    const double lr = o.lr();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<ASGDParamState>();
        fresh->eta = static_cast<float>(lr);
        fresh->ax = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<ASGDParamState&>(*slot);
      s.step += 1;
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      const double eta = s.eta;
      p.mul_(1 - o.lambd() * eta);
      p.add_(grad, -eta);
      if (s.mu != 1) {
        s.ax.add_(p.sub(s.ax).mul_(static_cast<double>(s.mu)));
      } else {
        s.ax.copy_(p);
      }
      const double step = static_cast<double>(s.step);
      s.eta = static_cast<float>(lr / std::pow(1 + o.lambd() * lr * step, o.alpha()));
      s.mu = static_cast<float>(1 / std::max(1.0, step - o.t0()));
    }
  }
}

}  // namespace tandem::optim
