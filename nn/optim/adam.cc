#include "nn/optim/adam.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"
#include "kernels/optim.h"
#include "nn/optim/fused.h"

namespace tandem::optim {

AdamOptions::AdamOptions(double lr) : lr_(lr) {}

void AdamOptions::validate() const {
  detail::check_betas_eps_weight_decay(optimizer_name(), betas_, eps_, weight_decay_);
}

void AdamOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["betas"] = {std::get<0>(betas_), std::get<1>(betas_)};
  out["eps"] = eps_;
  out["weight_decay"] = weight_decay_;
  out["amsgrad"] = amsgrad_;
  out["maximize"] = maximize_;
  out["fused"] = fused_ ? nlohmann::json(*fused_) : nlohmann::json(nullptr);
}

void AdamOptions::from_json(const nlohmann::json& in) {
  const char* name = optimizer_name();
  lr_ = detail::json_double(in, name, "lr");
  betas_ = detail::json_pair(in, name, "betas");
  eps_ = detail::json_double(in, name, "eps");
  weight_decay_ = detail::json_double(in, name, "weight_decay");
  amsgrad_ = detail::json_bool(in, name, "amsgrad");
  maximize_ = detail::json_bool_or_false(in, name, "maximize");
  fused_ = detail::json_optional_bool(in, name, "fused");
}

std::unique_ptr<OptimizerParamState> AdamParamState::clone() const {
  auto out = std::make_unique<AdamParamState>();
  out->step = step;
  if (exp_avg.defined()) out->exp_avg = exp_avg.clone();
  if (exp_avg_sq.defined()) out->exp_avg_sq = exp_avg_sq.clone();
  if (max_exp_avg_sq.defined()) out->max_exp_avg_sq = max_exp_avg_sq.clone();
  return out;
}

void AdamParamState::save(StateDict& out, const std::string& prefix) const {
  // An int64 count: exact for any number of steps (PyTorch keeps a float32 one).
  out.insert(prefix + "step", tensor(step));
  out.insert(prefix + "exp_avg", exp_avg.clone());
  out.insert(prefix + "exp_avg_sq", exp_avg_sq.clone());
  if (max_exp_avg_sq.defined()) out.insert(prefix + "max_exp_avg_sq", max_exp_avg_sq.clone());
}

size_t AdamParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  exp_avg = detail::load_like_param(in, prefix + "exp_avg", param);
  exp_avg_sq = detail::load_like_param(in, prefix + "exp_avg_sq", param);
  if (!in.contains(prefix + "max_exp_avg_sq")) return 3;
  max_exp_avg_sq = detail::load_like_param(in, prefix + "max_exp_avg_sq", param);
  return 4;
}

void AdamParamState::follow(const Tensor& param) {
  detail::follow_param(exp_avg, param);
  detail::follow_param(exp_avg_sq, param);
  detail::follow_param(max_exp_avg_sq, param);
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults)
    : Adam(std::move(param_groups), defaults.clone(), false) {}

Adam::Adam(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults, bool decoupled)
    : Optimizer(std::move(param_groups), std::move(defaults)), decoupled_weight_decay_(decoupled) {}

std::unique_ptr<OptimizerParamState> Adam::make_param_state() const { return std::make_unique<AdamParamState>(); }

namespace {

// p's state, made on its first step; the amsgrad buffer also when amsgrad was switched on after
// the first steps (a group's options can change).
AdamParamState& adam_state(std::unique_ptr<OptimizerParamState>& slot, const Tensor& p, bool amsgrad) {
  if (!slot) {
    auto fresh = std::make_unique<AdamParamState>();
    fresh->exp_avg = zeros_like(p);
    fresh->exp_avg_sq = zeros_like(p);
    slot = std::move(fresh);
  }
  auto& s = static_cast<AdamParamState&>(*slot);
  if (amsgrad && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = zeros_like(p);
  return s;
}

}  // namespace

// torch/optim/adam.py, _single_tensor_adam, with capturable and differentiable off, op by op; or
// one fused step per group. AdamW is the same with decoupled_weight_decay.
void Adam::update() {
  // Every group's choice is made before any group changes, so that fused=true refused changes nothing.
  std::vector<std::vector<Tensor>> fused;
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdamOptions&>(group.options());
    fused.push_back(detail::fused_params(group.params(), o.fused(), o.optimizer_name()));
  }
  for (size_t group_index = 0; group_index < fused.size(); ++group_index) {
    auto& group = param_groups()[group_index];
    const auto& o = static_cast<const AdamOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    const double lr = o.lr();
    if (const std::vector<Tensor>& params = fused[group_index]; !params.empty()) {
      std::vector<Tensor> grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
      std::vector<int64_t> steps;
      for (const Tensor& p : params) {
        AdamParamState& s = adam_state(state_slot(p), p, o.amsgrad());  // zeros: as good as none
        grads.push_back(p.grad());
        exp_avgs.push_back(s.exp_avg);
        exp_avg_sqs.push_back(s.exp_avg_sq);
        if (o.amsgrad()) max_exp_avg_sqs.push_back(s.max_exp_avg_sq);
        steps.push_back(s.step + 1);
      }
      kernels::adam_step_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                          kernels::AdamStep{lr, beta1, beta2, o.eps(), o.weight_decay(), decoupled_weight_decay_,
                                            o.amsgrad(), o.maximize()});
      for (const Tensor& p : params) static_cast<AdamParamState&>(*state_slot(p)).step += 1;  // once it is done
      continue;
    }
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      AdamParamState& s = adam_state(state_slot(p), p, o.amsgrad());
      s.step += 1;
      if (o.weight_decay() != 0) {
        if (decoupled_weight_decay_) {
          p.mul_(1 - lr * o.weight_decay());
        } else {
          grad = grad.add(p, o.weight_decay());
        }
      }
      detail::lerp_(s.exp_avg, grad, 1 - beta1);
      s.exp_avg_sq.mul_(beta2);
      detail::addcmul_(s.exp_avg_sq, grad, grad, 1 - beta2);

      const double step = static_cast<double>(s.step);
      const double bias_correction1 = 1 - std::pow(beta1, step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);  // Python's ** 0.5

      Tensor denom;
      if (o.amsgrad()) {
        s.max_exp_avg_sq.copy_(maximum(s.max_exp_avg_sq, s.exp_avg_sq));
        denom = s.max_exp_avg_sq.sqrt().div(bias_correction2_sqrt).add_(o.eps());
      } else {
        denom = s.exp_avg_sq.sqrt().div(bias_correction2_sqrt).add_(o.eps());
      }
      detail::addcdiv_(p, s.exp_avg, denom, -step_size);
    }
  }
}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

AdamW::AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults)
    : Adam(std::move(param_groups), defaults.clone(), true) {}

}  // namespace tandem::optim
