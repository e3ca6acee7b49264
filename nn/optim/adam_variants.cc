#include "nn/optim/adam_variants.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

namespace {

nlohmann::json betas_json(std::tuple<double, double> betas) { return {std::get<0>(betas), std::get<1>(betas)}; }

}  // namespace

// ---- Adamax ----

AdamaxOptions::AdamaxOptions(double lr) : lr_(lr) {}

void AdamaxOptions::validate() const {
  detail::check_betas_eps_weight_decay("Adamax", betas_, eps_, weight_decay_);
}

void AdamaxOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["betas"] = betas_json(betas_);
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["maximize"] = maximize_;
}

void AdamaxOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Adamax", "lr");
  betas_ = detail::json_pair(in, "Adamax", "betas");
  eps_ = detail::json_double(in, "Adamax", "eps");
  weight_decay_ = detail::json_double(in, "Adamax", "weight_decay");
  maximize_ = detail::json_bool(in, "Adamax", "maximize");
}

std::unique_ptr<OptimizerParamState> AdamaxParamState::clone() const {
  auto out = std::make_unique<AdamaxParamState>();
  out->step = step;
  out->exp_avg = detail::clone_if_defined(exp_avg);
  out->exp_inf = detail::clone_if_defined(exp_inf);
  return out;
}

void AdamaxParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "exp_avg", exp_avg.clone());
  out.insert(prefix + "exp_inf", exp_inf.clone());
}

size_t AdamaxParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  exp_avg = detail::load_like_param(in, prefix + "exp_avg", param);
  exp_inf = detail::load_like_param(in, prefix + "exp_inf", param);
  return 3;
}

void AdamaxParamState::follow(const Tensor& param) {
  detail::follow_param(exp_avg, param);
  detail::follow_param(exp_inf, param);
}

Adamax::Adamax(std::vector<Tensor> params, const AdamaxOptions& defaults)
    : Adamax(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adamax::Adamax(std::vector<OptimizerParamGroup> param_groups, const AdamaxOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> Adamax::make_param_state() const { return std::make_unique<AdamaxParamState>(); }

// torch/optim/adamax.py, _single_tensor_adamax, with capturable and differentiable off.
void Adamax::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdamaxOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<AdamaxParamState>();
        fresh->exp_avg = zeros_like(p);
        fresh->exp_inf = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<AdamaxParamState&>(*slot);
      s.step += 1;
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      detail::lerp_(s.exp_avg, grad, 1 - beta1);
      s.exp_inf.copy_(maximum(s.exp_inf.mul_(beta2), grad.abs().add_(o.eps())));
      const double bias_correction = 1 - std::pow(beta1, static_cast<double>(s.step));
      detail::addcdiv_(p, s.exp_avg, s.exp_inf, -(o.lr() / bias_correction));
    }
  }
}

// ---- NAdam ----

NAdamOptions::NAdamOptions(double lr) : lr_(lr) {}

void NAdamOptions::validate() const {
  detail::check_betas_eps_weight_decay("NAdam", betas_, eps_, weight_decay_);
  TD_CHECK(std::isfinite(momentum_decay_) && momentum_decay_ >= 0, "NAdam: invalid momentum_decay = ",
           momentum_decay_, " (must be >= 0)");
}

void NAdamOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["betas"] = betas_json(betas_);
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["momentum_decay"] = momentum_decay_;
  out["decoupled_weight_decay"] = decoupled_weight_decay_;
  out["maximize"] = maximize_;
}

void NAdamOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "NAdam", "lr");
  betas_ = detail::json_pair(in, "NAdam", "betas");
  eps_ = detail::json_double(in, "NAdam", "eps");
  weight_decay_ = detail::json_double(in, "NAdam", "weight_decay");
  momentum_decay_ = detail::json_double(in, "NAdam", "momentum_decay");
  decoupled_weight_decay_ = detail::json_bool(in, "NAdam", "decoupled_weight_decay");
  maximize_ = detail::json_bool(in, "NAdam", "maximize");
}

std::unique_ptr<OptimizerParamState> NAdamParamState::clone() const {
  auto out = std::make_unique<NAdamParamState>();
  out->step = step;
  out->mu_product = mu_product;
  out->exp_avg = detail::clone_if_defined(exp_avg);
  out->exp_avg_sq = detail::clone_if_defined(exp_avg_sq);
  return out;
}

void NAdamParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "mu_product", tensor(mu_product));
  out.insert(prefix + "exp_avg", exp_avg.clone());
  out.insert(prefix + "exp_avg_sq", exp_avg_sq.clone());
}

size_t NAdamParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  mu_product = detail::load_float32(in, prefix + "mu_product");
  exp_avg = detail::load_like_param(in, prefix + "exp_avg", param);
  exp_avg_sq = detail::load_like_param(in, prefix + "exp_avg_sq", param);
  return 4;
}

void NAdamParamState::follow(const Tensor& param) {
  detail::follow_param(exp_avg, param);
  detail::follow_param(exp_avg_sq, param);
}

NAdam::NAdam(std::vector<Tensor> params, const NAdamOptions& defaults)
    : NAdam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

NAdam::NAdam(std::vector<OptimizerParamGroup> param_groups, const NAdamOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> NAdam::make_param_state() const { return std::make_unique<NAdamParamState>(); }

// torch/optim/nadam.py, _single_tensor_nadam, with capturable and differentiable off. The product
// of the momentum factors is a float32 number there (a 0-dim tensor of the default scalar dtype),
// multiplied in float32 at each step: so it is here.
void NAdam::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const NAdamOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double lr = o.lr();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<NAdamParamState>();
        fresh->exp_avg = zeros_like(p);
        fresh->exp_avg_sq = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<NAdamParamState&>(*slot);
      s.step += 1;
      const double step = static_cast<double>(s.step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      if (o.weight_decay() != 0) {
        if (o.decoupled_weight_decay()) {
          p.mul_(1 - lr * o.weight_decay());
        } else {
          grad = grad.add(p, o.weight_decay());
        }
      }
      const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * o.momentum_decay()));
      const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay()));
      s.mu_product = s.mu_product * static_cast<float>(mu);
      detail::lerp_(s.exp_avg, grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2);
      detail::addcmul_(s.exp_avg_sq, grad, grad, 1 - beta2);
      Tensor denom = s.exp_avg_sq.div(bias_correction2).sqrt();
      const double mu_product = s.mu_product, mu_product_next = mu_product * mu_next;
      denom.add_(o.eps());
      detail::addcdiv_(p, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product));
      detail::addcdiv_(p, s.exp_avg, denom, (-lr * mu_next) / (1.0 - mu_product_next));
    }
  }
}

// ---- RAdam ----

RAdamOptions::RAdamOptions(double lr) : lr_(lr) {}

void RAdamOptions::validate() const { detail::check_betas_eps_weight_decay("RAdam", betas_, eps_, weight_decay_); }

void RAdamOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["betas"] = betas_json(betas_);
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["decoupled_weight_decay"] = decoupled_weight_decay_;
  out["maximize"] = maximize_;
}

void RAdamOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "RAdam", "lr");
  betas_ = detail::json_pair(in, "RAdam", "betas");
  eps_ = detail::json_double(in, "RAdam", "eps");
  weight_decay_ = detail::json_double(in, "RAdam", "weight_decay");
  decoupled_weight_decay_ = detail::json_bool(in, "RAdam", "decoupled_weight_decay");
  maximize_ = detail::json_bool(in, "RAdam", "maximize");
}

std::unique_ptr<OptimizerParamState> RAdamParamState::clone() const {
  auto out = std::make_unique<RAdamParamState>();
  out->step = step;
  out->exp_avg = detail::clone_if_defined(exp_avg);
  out->exp_avg_sq = detail::clone_if_defined(exp_avg_sq);
  return out;
}

void RAdamParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "exp_avg", exp_avg.clone());
  out.insert(prefix + "exp_avg_sq", exp_avg_sq.clone());
}

size_t RAdamParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  exp_avg = detail::load_like_param(in, prefix + "exp_avg", param);
  exp_avg_sq = detail::load_like_param(in, prefix + "exp_avg_sq", param);
  return 3;
}

void RAdamParamState::follow(const Tensor& param) {
  detail::follow_param(exp_avg, param);
  detail::follow_param(exp_avg_sq, param);
}

RAdam::RAdam(std::vector<Tensor> params, const RAdamOptions& defaults)
    : RAdam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

RAdam::RAdam(std::vector<OptimizerParamGroup> param_groups, const RAdamOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> RAdam::make_param_state() const { return std::make_unique<RAdamParamState>(); }

// torch/optim/radam.py, _single_tensor_radam, with capturable and differentiable off. Python's
// `number / tensor` there is the tensor's reciprocal times the number.
void RAdam::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const RAdamOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double lr = o.lr();
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<RAdamParamState>();
        fresh->exp_avg = zeros_like(p);
        fresh->exp_avg_sq = zeros_like(p);
        slot = std::move(fresh);
      }
      auto& s = static_cast<RAdamParamState&>(*slot);
      s.step += 1;
      const double step = static_cast<double>(s.step);
      if (o.weight_decay() != 0) {
        if (o.decoupled_weight_decay()) {
          p.mul_(1 - lr * o.weight_decay());
        } else {
          grad = grad.add(p, o.weight_decay());
        }
      }
      detail::lerp_(s.exp_avg, grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2);
      detail::addcmul_(s.exp_avg_sq, grad, grad, 1 - beta2);
      const double bias_correction1 = 1 - std::pow(beta1, step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      const Tensor corrected = s.exp_avg / bias_correction1;
      // The length of the approximated simple moving average, and its limit.
      const double rho_inf = 2 / (1 - beta2) - 1;
      const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
      if (rho_t > 5.0) {
        const double rect =
            std::pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.5);
        const Tensor adaptive_lr = s.exp_avg_sq.sqrt().add_(o.eps()).reciprocal() * std::pow(bias_correction2, 0.5);
        p.add_(corrected * lr * adaptive_lr * rect, -1.0);
      } else {
        p.add_(corrected * lr, -1.0);
      }
    }
  }
}

}  // namespace tandem::optim
